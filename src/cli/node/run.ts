/**
 * `mesh-node run`: joins the mesh (enrolling first when the data folder holds no identity and a bootstrap token or
 * ID token is given) and serves the local API until stopped. Without an identity or a way to get one it still
 * starts, serving only the login instructions, and picks up an identity that `join` writes meanwhile.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { dirname, join as joinPath } from "node:path"
import * as Command from "@effect/cli/Command"
import { Duration, Effect, Either, Layer, Option } from "effect"
import * as NodeConfig from "../../config/NodeConfig.js"
import * as LocalHosts from "../../domain/LocalHosts.js"
import * as NodeFile from "../../domain/NodeFile.js"
import * as Logging from "../../layers/Logging.js"
import * as ApiTokenLive from "../../layers/node/ApiTokenLive.js"
import * as Tracing from "../../layers/observability/Tracing.js"
import * as NodeLive from "../../node/NodeLive.js"
import * as PrivatePaths from "../../node/PrivatePaths.js"
import * as Check from "../Check.js"
import * as Flag from "../flags.js"
import { UsageError } from "../run.js"
import * as NodeFlags from "./flags.js"

const flags = {
  controlPlane: NodeFlags.controlPlane,
  dataDir: NodeFlags.dataDir,
  config: Flag.optionalText("config", {
    env: "MESH_CONFIG",
    description: `Configuration file (labels, egress floor, services). Default: <data-dir>/${NodeConfig.defaults.configFile}; a missing default file means an empty configuration.`,
  }),
  listen: Flag.repeatable("listen", "MESH_LISTEN", `libp2p listen multiaddr. Default: ${NodeConfig.defaults.listen}.`),
  externalAddr: Flag.repeatable(
    "external-addr",
    "MESH_EXTERNAL_ADDR",
    "Address peers are told to dial instead of the listen addresses (behind NAT or a port forward).",
  ),
  bindAddr: Flag.text("bind-addr", {
    env: "MESH_BIND_ADDR",
    fallback: NodeConfig.defaults.bindAddress,
    description: "host:port of the local API's TCP listener (API token required); empty disables it.",
  }),
  allowedHosts: Flag.text("allowed-hosts", {
    env: "MESH_ALLOWED_HOSTS",
    placeholder: "names",
    fallback: "",
    description:
      "Comma-separated names the local API answers to in Host and Origin besides loopback ones and the --bind-addr host (DNS-rebinding protection); * takes any.",
  }),
  socketPath: Flag.optionalAllowEmpty("socket-path", {
    env: "MESH_SOCKET_PATH",
    description: `Unix socket of the local API (mode 0600, no token). Default: <data-dir>/${NodeConfig.defaults.socketFile}; empty disables it.`,
  }),
  tlsCert: Flag.optionalText("tls-cert", {
    env: "MESH_TLS_CERT",
    description: "PEM certificate: serve the TCP listener over TLS.",
  }),
  tlsKey: Flag.optionalText("tls-key", { env: "MESH_TLS_KEY", description: "PEM private key of --tls-cert." }),
  tlsCa: Flag.optionalText("tls-ca", {
    env: "MESH_TLS_CA",
    description: "PEM CA: TCP clients must present a certificate it signed (mTLS), which replaces the API token.",
  }),
  metricsAddr: Flag.optionalText("metrics-addr", {
    env: "MESH_METRICS_ADDR",
    description: "host:port serving /metrics, /healthz and /readyz without authentication.",
  }),
  apiTokenPath: Flag.optionalText("api-token-path", {
    env: "MESH_API_TOKEN_PATH",
    description: `File holding the API token; else MESH_API_TOKEN; else <data-dir>/${NodeConfig.defaults.apiTokenFile}, created with a random token on first run.`,
  }),
  syncInterval: Flag.duration("control-plane-sync-interval", {
    env: "MESH_CONTROL_PLANE_SYNC_INTERVAL",
    fallback: NodeConfig.defaults.syncInterval,
    description:
      "How often keys, bans and the policy are re-read (jittered); keep it well within the key grace period.",
  }),
  peerHeadersTimeout: Flag.duration("peer-headers-timeout", {
    env: "MESH_PEER_HEADERS_TIMEOUT",
    fallback: NodeConfig.defaults.peerHeadersTimeout,
    description: "A peer's proxy stream must send its request's headers within this, or it is reset; 0: no limit.",
  }),
  peerIdleTimeout: Flag.duration("peer-idle-timeout", {
    env: "MESH_PEER_IDLE_TIMEOUT",
    fallback: NodeConfig.defaults.peerIdleTimeout,
    description: "A peer's proxy stream with no bytes either way for this long is reset; 0: never.",
  }),
  relaySlots: Flag.integer("relay-slots", {
    env: "MESH_RELAY_SLOTS",
    fallback: NodeConfig.defaults.relaySlots,
    description:
      "Relay slots held at once, one per connected router (the first listed first), so peers behind NAT reach this node through any of them; 0: none.",
  }),
  peerMaxStreams: Flag.integer("peer-max-streams", {
    env: "MESH_PEER_MAX_STREAMS",
    fallback: NodeConfig.defaults.peerMaxStreams,
    description: "Proxy streams one peer may hold open at once; beyond, new ones are reset.",
  }),
  backendHeadersTimeout: Flag.duration("backend-headers-timeout", {
    env: "MESH_BACKEND_HEADERS_TIMEOUT",
    fallback: NodeConfig.defaults.backendHeadersTimeout,
    description: "A service's backend must send its answer's headers within this, else the peer gets 502; 0: no limit.",
  }),
  maxResponseBytes: Flag.optionalText("max-response-bytes", {
    env: "MESH_MAX_RESPONSE_BYTES",
    placeholder: "bytes",
    description: `Most bytes read from a peer per response (an MCP answer, a proxied or inference answer); past it the exchange is reset. Default: max_response_bytes of the configuration file, else ${NodeConfig.defaults.maxResponseBytes}.`,
  }),
  inferenceHeadersTimeout: Flag.duration("inference-headers-timeout", {
    env: "MESH_INFERENCE_HEADERS_TIMEOUT",
    fallback: NodeConfig.defaults.inferenceHeadersTimeout,
    description:
      "How long an inference provider may take to send its response head before the next provider is tried; a stream that has begun is not limited.",
  }),
  bootstrapTokenPath: NodeFlags.bootstrapTokenPath,
  jwtPath: NodeFlags.jwtPath,
  logLevel: Flag.logLevel,
  check: Check.flag,
}

/** A duration flag where 0 means no limit. */
const unlimitedIfZero = (duration: Duration.Duration) => (Duration.isZero(duration) ? Duration.infinity : duration)

type Flags = Command.Command.ParseConfig<typeof flags>

const usage = (message: string) => new UsageError({ message })

const address = (flag: string, value: string) =>
  Either.match(Flag.parseListenAddress(flag, value), {
    onLeft: (message) => Effect.fail(usage(message)),
    onRight: Effect.succeed,
  })

/** The configuration file, decoded; a missing file is an empty configuration unless it was named explicitly. */
const readConfig = (path: string, explicit: boolean) =>
  Effect.gen(function* () {
    if (!existsSync(path)) {
      return explicit ? yield* usage(`--config ${path}: no such file`) : NodeFile.empty
    }
    const text = yield* Effect.try({
      try: () => readFileSync(path, "utf8"),
      catch: (cause) => usage(`--config ${path}: ${(cause as NodeJS.ErrnoException).code ?? "unreadable"}`),
    })
    return yield* Either.match(NodeFile.parse(text), {
      onLeft: (reason) => Effect.fail(usage(`${path}: ${reason}`)),
      onRight: Effect.succeed,
    })
  })

const responseCap = (value: string) => {
  const n = Number(value.trim())
  return /^\d+$/.test(value.trim()) && NodeFile.isResponseCap(n)
    ? Effect.succeed(n)
    : Effect.fail(
        usage(
          `--max-response-bytes: "${value}" is not a whole number of bytes, at least ${NodeFile.MIN_RESPONSE_BYTES}`,
        ),
      )
}

/** A private place open to others stops the node before it reads or serves anything there: exit 2, one line. */
const privately = (checked: Either.Either<void, string>) =>
  Either.match(checked, { onLeft: (reason) => Effect.fail(usage(reason)), onRight: () => Effect.void })

const readable = (flag: string, path: string) =>
  existsSync(path) ? Effect.succeed(path) : Effect.fail(usage(`--${flag} ${path}: no such file`))

export const settingsFromFlags = (f: Flags) =>
  Effect.gen(function* () {
    mkdirSync(f.dataDir, { recursive: true, mode: 0o700 })
    yield* privately(PrivatePaths.checkNotOpen(f.dataDir, "the data folder"))
    const configPath = Option.getOrElse(f.config, () => joinPath(f.dataDir, NodeConfig.defaults.configFile))
    const file = yield* readConfig(configPath, Option.isSome(f.config))
    const bindAddress = f.bindAddr.trim() === "" ? Option.none() : Option.some(yield* address("bind-addr", f.bindAddr))
    const allowedHosts = Flag.list(f.allowedHosts)
    const badHost = allowedHosts.find((name) => !LocalHosts.isHostName(name))
    if (badHost !== undefined)
      return yield* usage(`--allowed-hosts: ${badHost} is not a host name (no port, no scheme)`)
    const socketPath = Option.match(f.socketPath, {
      onNone: () => Option.some(NodeConfig.socketPathIn(f.dataDir)),
      onSome: (path) => (path.trim() === "" ? Option.none() : Option.some(path)),
    })
    if (Option.isSome(socketPath)) {
      yield* privately(PrivatePaths.privateFolder(dirname(socketPath.value), "the socket's folder"))
    }
    if (Option.isSome(f.tlsCa) && (Option.isNone(f.tlsCert) || Option.isNone(f.tlsKey))) {
      return yield* usage("--tls-ca needs --tls-cert and --tls-key (the listener must be TLS to verify clients)")
    }
    if (Option.isSome(f.tlsCert) !== Option.isSome(f.tlsKey)) {
      return yield* usage("--tls-cert and --tls-key go together")
    }
    const tls =
      Option.isSome(f.tlsCert) && Option.isSome(f.tlsKey)
        ? Option.some({
            certPath: yield* readable("tls-cert", f.tlsCert.value),
            keyPath: yield* readable("tls-key", f.tlsKey.value),
            caPath: Option.isSome(f.tlsCa) ? Option.some(yield* readable("tls-ca", f.tlsCa.value)) : Option.none(),
          })
        : Option.none()
    const metricsAddress = Option.isSome(f.metricsAddr)
      ? Option.some(yield* address("metrics-addr", f.metricsAddr.value))
      : Option.none()
    if (f.peerMaxStreams < 1) return yield* usage("--peer-max-streams must be at least 1")
    if (f.relaySlots < 0) return yield* usage("--relay-slots must be 0 or more")
    if (Duration.toMillis(f.inferenceHeadersTimeout) <= 0) {
      return yield* usage("--inference-headers-timeout must be longer than 0")
    }
    const maxResponseBytes = Option.isSome(f.maxResponseBytes)
      ? Option.some(yield* responseCap(f.maxResponseBytes.value))
      : Option.none()
    const token = yield* ApiTokenLive.resolve({
      path: f.apiTokenPath,
      fromEnvironment: yield* Flag.readSecret(Option.none(), "MESH_API_TOKEN"),
      dataDir: f.dataDir,
    }).pipe(Effect.mapError((error) => usage(error.reason)))
    if (Option.isSome(token.path)) yield* privately(PrivatePaths.checkNotOpen(token.path.value, "the API token file"))
    return NodeConfig.make({
      controlPlaneUrl: f.controlPlane,
      dataDir: f.dataDir,
      listen: yield* Flag.repeatedOr(f.listen, "MESH_LISTEN", [NodeConfig.defaults.listen]),
      externalAddresses: yield* Flag.repeatedOr(f.externalAddr, "MESH_EXTERNAL_ADDR", []),
      bindAddress,
      allowedHosts,
      socketPath,
      tls,
      metricsAddress,
      apiToken: token.token,
      apiTokenPath: token.path,
      syncInterval: f.syncInterval,
      bootstrapToken: Option.isSome(f.bootstrapTokenPath)
        ? Option.some(yield* Flag.readSecretFile(f.bootstrapTokenPath.value))
        : Option.none(),
      jwtPath: f.jwtPath,
      file,
      logLevel: f.logLevel,
      ingress: {
        headersTimeout: unlimitedIfZero(f.peerHeadersTimeout),
        idleTimeout: unlimitedIfZero(f.peerIdleTimeout),
        maxStreamsPerPeer: f.peerMaxStreams,
        backendHeadersTimeout: Duration.isZero(f.backendHeadersTimeout)
          ? Option.none()
          : Option.some(f.backendHeadersTimeout),
      },
      maxResponseBytes,
      inferenceHeadersTimeout: f.inferenceHeadersTimeout,
      relaySlots: f.relaySlots,
    })
  })

/** `--check`: what would run, no secret (the API token's file is named, never its content). */
const checkReport = (f: Flags, s: NodeConfig.NodeSettings) =>
  Check.report("mesh-node", [
    ["control plane", Check.optional(s.controlPlaneUrl, (u) => u, "the one recorded by join in the data folder")],
    ["data folder", s.dataDir],
    ["configuration", Option.getOrElse(f.config, () => joinPath(f.dataDir, NodeConfig.defaults.configFile))],
    ["labels", Check.list(Object.entries(s.file.labels).map(([k, v]) => `${k}=${v}`))],
    ["services", Check.list(s.file.services.map((svc) => `${svc.type}://${svc.name}`))],
    ["listen", Check.list(s.listen)],
    ["local API", Check.optional(s.bindAddress, Check.address, "off")],
    ["tls", Option.isSome(s.tls) ? (Option.isSome(s.tls.value.caPath) ? "mTLS" : "TLS") : "off"],
    ["socket", Check.optional(s.socketPath, (p) => p, "off")],
    ["api token", Check.optional(s.apiTokenPath, (p) => `in ${p}`, "from MESH_API_TOKEN")],
    [
      "bootstrap token",
      Check.secret(
        s.bootstrapToken,
        Option.getOrElse(f.bootstrapTokenPath, () => ""),
      ),
    ],
    ["metrics", Check.optional(s.metricsAddress, Check.address, "off")],
    ["sync", Check.duration(s.syncInterval)],
  ])

export const run = Command.make("run", flags, (f) =>
  Effect.gen(function* () {
    const settings = yield* settingsFromFlags(f)
    if (f.check) return yield* checkReport(f, settings)
    yield* Effect.logInfo("starting node").pipe(
      Effect.annotateLogs({
        data_dir: settings.dataDir,
        bind_addr: Option.getOrElse(
          Option.map(settings.bindAddress, (a) => `${a.host}:${a.port}`),
          () => "off",
        ),
        socket: Option.getOrElse(settings.socketPath, () => "off"),
        services: settings.file.services.length,
      }),
    )
    return yield* Layer.launch(NodeLive.layer(settings))
  }).pipe(Effect.provide(Layer.merge(Logging.layerFromConfig(f.logLevel), Tracing.fromConfig("mesh-node")))),
).pipe(Command.withDescription("Join the mesh and serve the local API to the agents on this machine."))

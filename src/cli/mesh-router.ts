/** `mesh-router [flags]`: a router of the mesh: relay, DHT server and gossip hub for authenticated peers. */
import * as Command from "@effect/cli/Command"
import { Effect, Either, Layer, Option } from "effect"
import * as RouterConfig from "../config/RouterConfig.js"
import * as Logging from "../layers/Logging.js"
import * as Tracing from "../layers/observability/Tracing.js"
import * as RouterLive from "../layers/router/RouterLive.js"
import * as Check from "./Check.js"
import * as Flag from "./flags.js"
import { UsageError } from "./run.js"

const flags = {
  controlPlane: Flag.optionalText("control-plane", {
    env: "MESH_CONTROL_PLANE",
    description: "URL of the control plane, e.g. https://mesh.example.com. Required.",
  }),
  listen: Flag.repeatable(
    "listen",
    "MESH_LISTEN",
    `libp2p listen multiaddr. Default: ${RouterConfig.defaults.listen}.`,
  ),
  externalAddr: Flag.repeatable(
    "external-addr",
    "MESH_EXTERNAL_ADDR",
    "Address to announce instead of the listen addresses.",
  ),
  dataDir: Flag.text("data-dir", {
    env: "MESH_DATA_DIR",
    fallback: RouterConfig.defaults.dataDir,
    description: "Folder for the router's key and credential (files 0600).",
  }),
  bootstrapToken: Flag.optionalText("bootstrap-token", {
    env: "MESH_BOOTSTRAP_TOKEN",
    description: "Bootstrap token for the first enrollment (prefer --bootstrap-token-path: argv is visible to ps).",
  }),
  bootstrapTokenPath: Flag.optionalText("bootstrap-token-path", {
    env: "MESH_BOOTSTRAP_TOKEN_PATH",
    description: "File holding the bootstrap token.",
  }),
  jwtPath: Flag.optionalText("jwt-path", {
    env: "MESH_JWT_PATH",
    description: "File holding an OIDC ID token to enroll with.",
  }),
  keysSyncInterval: Flag.duration("keys-sync-interval", {
    env: "MESH_KEYS_SYNC_INTERVAL",
    fallback: RouterConfig.defaults.keysSyncInterval,
    description: "How often the control plane's keys and bans are re-read; keep it well within the key grace period.",
  }),
  leaseRenewInterval: Flag.duration("lease-renew-interval", {
    env: "MESH_LEASE_RENEW_INTERVAL",
    fallback: RouterConfig.defaults.leaseRenewInterval,
    description: "How often the lease is renewed; keep it well within the control plane's --lease-duration.",
  }),
  metricsAddr: Flag.optionalText("metrics-addr", {
    env: "MESH_METRICS_ADDR",
    description: "host:port serving /healthz, /readyz and /metrics without authentication.",
  }),
  logLevel: Flag.logLevel,
  check: Check.flag,
}

export const meshRouter = Command.make("mesh-router", flags, (f) =>
  Effect.gen(function* () {
    const controlPlaneUrl = yield* Option.match(f.controlPlane, {
      onNone: () => Effect.fail(new UsageError({ message: "--control-plane is required (or MESH_CONTROL_PLANE)" })),
      onSome: Effect.succeed,
    })
    const listen = yield* Flag.repeatedOr(f.listen, "MESH_LISTEN", [RouterConfig.defaults.listen])
    const external = yield* Flag.repeatedOr(f.externalAddr, "MESH_EXTERNAL_ADDR", [])
    const bootstrapToken = Option.isSome(f.bootstrapTokenPath)
      ? Option.some(yield* Flag.readSecretFile(f.bootstrapTokenPath.value))
      : Option.map(f.bootstrapToken, (t) => Flag.redact(t))
    const metricsAddress = Option.isSome(f.metricsAddr)
      ? Option.some(
          yield* Either.match(Flag.parseListenAddress("metrics-addr", f.metricsAddr.value), {
            onLeft: (message) => Effect.fail(new UsageError({ message })),
            onRight: Effect.succeed,
          }),
        )
      : Option.none()
    const settings = RouterConfig.make({
      controlPlaneUrl,
      listen,
      externalAddresses: external,
      dataDir: Option.some(f.dataDir),
      bootstrapToken,
      jwtPath: f.jwtPath,
      keysSyncInterval: f.keysSyncInterval,
      leaseRenewInterval: f.leaseRenewInterval,
      metricsAddress,
      logLevel: f.logLevel,
    })
    if (f.check) {
      return yield* Check.report("mesh-router", [
        ["control plane", settings.controlPlaneUrl],
        ["listen", Check.list(settings.listen)],
        ["external addresses", Check.list(settings.externalAddresses)],
        ["data folder", Check.optional(settings.dataDir, (d) => d)],
        [
          "bootstrap token",
          Check.secret(
            settings.bootstrapToken,
            Option.isSome(f.bootstrapTokenPath) ? f.bootstrapTokenPath.value : "--bootstrap-token",
          ),
        ],
        ["jwt", Check.optional(settings.jwtPath, (p) => p)],
        ["keys sync", Check.duration(settings.keysSyncInterval)],
        ["lease renewal", Check.duration(settings.leaseRenewInterval)],
        ["metrics", Check.optional(settings.metricsAddress, Check.address, "off")],
      ])
    }
    yield* Effect.logInfo("starting router").pipe(
      Effect.annotateLogs({ control_plane: controlPlaneUrl, listen: settings.listen.join(",") }),
    )
    return yield* Layer.launch(RouterLive.layer(settings))
  }).pipe(Effect.provide(Layer.merge(Logging.layerFromConfig(f.logLevel), Tracing.fromConfig("mesh-router")))),
).pipe(Command.withDescription("A mesh router: relay, DHT server and gossip hub for authenticated peers."))

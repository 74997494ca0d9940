/**
 * A mesh of real processes for the deployment-scale tests and the scale harness: a control plane, routers that can
 * be stopped and started again on the same port and data folder, and nodes, each a child process run from source.
 * A member may run inside a network namespace (`prefix: ["ip", "netns", "exec", <ns>]`); its local API is then
 * reached over its Unix socket, which the namespace does not hide.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Duration, Effect, Redacted, type Scope } from "effect"
import { freePort } from "../../src/testing/Ports.js"
import * as ControlPlaneProcess from "./ControlPlaneProcess.js"
import * as Local from "./LocalApi.js"
import * as MemberProcess from "./MemberProcess.js"
import { admin, mintToken, poll } from "./Requests.js"
import * as Restartable from "./Restartable.js"

/** Every node may call every service of every other node. */
export const OPEN_POLICY = {
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["*"], allowed_targets: ["*"] }],
  bindings: [],
}

export interface Options {
  readonly folder: string
  /** Control-plane flags after the defaults. */
  readonly controlPlaneFlags?: ReadonlyArray<string>
  /** How often members re-read /keys and /info. */
  readonly syncInterval?: string
  /** The address the control plane listens on and members reach it at; default 127.0.0.1. */
  readonly controlPlaneHost?: string
  readonly controlPlanePrefix?: ReadonlyArray<string>
}

export interface Router {
  readonly name: string
  readonly port: number
  readonly metricsUrl: string
  /** Starts the process (again); waits until it is ready. */
  readonly start: Effect.Effect<void, Error>
  /** SIGTERM, waits for the exit. */
  readonly stop: Effect.Effect<void>
  /** SIGKILL (a crash), waits for the exit. */
  readonly kill: Effect.Effect<void>
  readonly output: Effect.Effect<string>
  /** The running process's id; -1 while stopped. */
  readonly pid: Effect.Effect<number>
}

export interface Node extends Local.Endpoint {
  readonly name: string
  /** What the running process (the latest, after a restart) wrote so far. */
  readonly output: Effect.Effect<string>
  /** The running process's id; -1 while stopped. */
  readonly pid: Effect.Effect<number>
  /** Starts the process again on the same data folder (its identity and credential), after `stop`. */
  readonly start: Effect.Effect<void>
  /** SIGTERM, waits for the exit. */
  readonly stop: Effect.Effect<void>
}

/** A token file the member enrolls with; usable again, so a member that lost its credential can enroll anew. */
const tokenFile = (cp: ControlPlaneProcess.ControlPlaneProcess, path: string, role: string) =>
  Effect.map(mintToken(cp, { role, max_usages: 100 }), (minted) =>
    writeFileSync(path, `${minted.token}\n`, { mode: 0o600 }),
  )

export const controlPlane = (options: Options) =>
  Effect.gen(function* () {
    const database = { driver: "sqlite", dsn: Redacted.make(join(options.folder, "control-plane.db")) } as const
    const cp = yield* ControlPlaneProcess.start({
      database,
      flags: [
        "--auto-approve-enrollment",
        "--member-sync-interval",
        options.syncInterval ?? "10s",
        ...(options.controlPlaneFlags ?? []),
      ],
      ...(options.controlPlaneHost === undefined ? {} : { host: options.controlPlaneHost }),
      ...(options.controlPlanePrefix === undefined ? {} : { prefix: options.controlPlanePrefix }),
    })
    const policy = yield* admin(cp, "POST", "/policies", OPEN_POLICY)
    if (policy.status !== 200) return yield* Effect.fail(new Error(`policy refused: ${policy.status}`))
    return cp
  })

export interface RouterOptions {
  /** The address to listen on; default 127.0.0.1. */
  readonly host?: string
  /** The address the metrics listener binds (and the test reaches); default `host`. */
  readonly metricsHost?: string
  readonly prefix?: ReadonlyArray<string>
  readonly syncInterval?: string
  /** The libp2p port; default: a free one. */
  readonly port?: number
  /** Flags after the defaults, e.g. `--external-addr`. */
  readonly extraArgs?: ReadonlyArray<string>
}

/** A router on a fixed port and data folder, so that a restart comes back where its members look for it. */
export const router = (
  cp: ControlPlaneProcess.ControlPlaneProcess,
  folder: string,
  name: string,
  options: RouterOptions = {},
): Effect.Effect<Router, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const token = join(folder, `${name}-bootstrap-token`)
    yield* tokenFile(cp, token, "mesh:role:router")
    const port = options.port ?? (yield* Effect.promise(freePort))
    const metricsPort = yield* Effect.promise(freePort)
    const metricsHost = options.metricsHost ?? options.host ?? "127.0.0.1"
    const metricsUrl = `http://${metricsHost}:${metricsPort}`
    const args = [
      "--control-plane",
      cp.url,
      "--listen",
      `/ip4/${options.host ?? "127.0.0.1"}/tcp/${port}`,
      "--data-dir",
      join(folder, name),
      "--bootstrap-token-path",
      token,
      "--keys-sync-interval",
      options.syncInterval ?? "10s",
      "--metrics-addr",
      `${metricsHost}:${metricsPort}`,
      "--log-level",
      "info",
      ...(options.extraArgs ?? []),
    ]
    const process = yield* Restartable.make(MemberProcess.start("mesh-router", args, {}, options.prefix))
    const start = Effect.gen(function* () {
      yield* process.start
      yield* poll(
        Effect.promise(() =>
          fetch(`${metricsUrl}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
            (r) => r.status,
            () => 0,
          ),
        ),
        (status) => status === 200,
        { what: `router ${name} is ready`, timeout: Duration.seconds(120), interval: Duration.millis(200) },
      )
    })
    yield* start
    const { stop, kill, output, pid } = process
    return { name, port, metricsUrl, start, stop, kill, output, pid }
  })

export interface NodeOptions {
  /** mesh-node.yaml */
  readonly config?: string
  /** libp2p listen address; default /ip4/127.0.0.1/tcp/0. */
  readonly listen?: string
  readonly prefix?: ReadonlyArray<string>
  readonly syncInterval?: string
  readonly extraArgs?: ReadonlyArray<string>
  /** MESH_* settings for the process (the parent's are not passed on). */
  readonly env?: Readonly<Record<string, string>>
}

/** A node; its local API is its Unix socket (no token), reachable whatever namespace it runs in. */
export const node = (
  cp: ControlPlaneProcess.ControlPlaneProcess,
  folder: string,
  name: string,
  options: NodeOptions = {},
): Effect.Effect<Node, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const data = join(folder, name)
    mkdirSync(data, { mode: 0o700 })
    writeFileSync(join(data, "mesh-node.yaml"), options.config ?? "labels: {}\n")
    const token = join(folder, `${name}-bootstrap-token`)
    yield* tokenFile(cp, token, "mesh:role:node")
    const args = [
      "run",
      "--control-plane",
      cp.url,
      "--data-dir",
      data,
      "--bootstrap-token-path",
      token,
      "--listen",
      options.listen ?? "/ip4/127.0.0.1/tcp/0",
      // The socket is the local API here: no TCP listener, so any number of nodes share a machine.
      "--bind-addr",
      "",
      "--control-plane-sync-interval",
      options.syncInterval ?? "10s",
      "--log-level",
      "info",
      ...(options.extraArgs ?? []),
    ]
    const process = yield* Restartable.make(MemberProcess.start("mesh-node", args, options.env ?? {}, options.prefix))
    yield* process.start
    const { start, stop, output, pid } = process
    return { name, output, pid, socketPath: join(data, "mesh.sock"), start, stop }
  })

/** The node's peer id, once it is a member (its socket answers only once the node has started). */
export const peerIdOf = (node: Node, timeout: Duration.DurationInput = Duration.seconds(120)) =>
  poll(
    Local.json<{ phase?: string; peer_id?: string }>(node, "/debug/mesh-info").pipe(
      Effect.orElseSucceed(() => ({}) as { phase?: string; peer_id?: string }),
    ),
    (info) => info.phase === "member" && typeof info.peer_id === "string",
    { what: `node ${node.name} becomes a member`, timeout, interval: Duration.millis(200) },
  ).pipe(
    Effect.map((info) => info.peer_id as string),
    Effect.tapError(() =>
      Effect.flatMap(node.output, (output) =>
        Effect.logError(`node ${node.name} output (last 3000 chars):\n${output.slice(-3_000)}`),
      ),
    ),
  )

/** Peer ids of the providers of `type`/`name` that the node's discovery finds now. */
export const discover = (node: Node, type: string, name: string, timeout = "3s") =>
  Local.json<ReadonlyArray<{ peer_id: string }>>(
    node,
    `/mesh/service/discover?type=${type}&name=${encodeURIComponent(name)}&timeout=${timeout}`,
  ).pipe(
    Effect.map((rows) => (Array.isArray(rows) ? rows.map((r) => r.peer_id) : [])),
    Effect.orElseSucceed((): ReadonlyArray<string> => []),
  )

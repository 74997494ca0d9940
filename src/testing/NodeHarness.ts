/**
 * Nodes in the calling process, enrolled against a harnessed (or any) control plane with a node bootstrap token,
 * their local API on an ephemeral loopback port and a Unix socket in their own data folder. Public test support,
 * like the control-plane and router harnesses; each node has its own configuration file contents.
 */

import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted, Schedule, type Scope } from "effect"
import * as NodeConfig from "../config/NodeConfig.js"
import type * as NodeFile from "../domain/NodeFile.js"
import * as Tracing from "../layers/observability/Tracing.js"
import { LocalApi } from "../node/Listeners.js"
import * as NodeLive from "../node/NodeLive.js"
import { NodeLifecycle, type NodeLifecycleService } from "../services/node/NodeLifecycle.js"
import type { ControlPlaneHarness } from "./ControlPlaneHarness.js"
import * as MeshClient from "./MeshClient.js"

export interface NodeHarness {
  /** `http://127.0.0.1:<port>` of the TCP listener. */
  readonly url: string
  readonly socketPath: string
  readonly apiToken: string
  readonly dataDir: string
  readonly settings: NodeConfig.NodeSettings
  readonly lifecycle: NodeLifecycleService
  /** The node's peer id once it is a member (waits for it). */
  readonly peerId: Effect.Effect<string>
  /** Waits until the node is connected to the mesh. */
  readonly connected: Effect.Effect<void>
}

export interface Options {
  readonly file?: NodeFile.NodeFile
  /** Enroll with a fresh node token minted through the operator API (default), or not at all (login-only). */
  readonly enroll?: boolean
  readonly overrides?: Partial<NodeConfig.NodeSettings>
  readonly logLevel?: LogLevel.LogLevel
  /** Tracing for this node (`Tracing.layer`); off by default. */
  readonly tracing?: Layer.Layer<never>
}

/** A node-role bootstrap token minted through the operator API. */
export const nodeToken = (cp: ControlPlaneHarness, body: Record<string, unknown> = {}) =>
  Effect.flatMap(
    MeshClient.json(cp.url, "POST", "/admin/bootstrap-tokens", cp.adminToken, { role: "mesh:role:node", ...body }),
    (answer) =>
      answer.status === 201
        ? Effect.succeed((answer.json as { token: string }).token)
        : Effect.dieMessage(`node token refused: ${answer.status}`),
  )

/** A temporary data folder for the life of the scope. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-node-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
)

const waitFor = <A>(effect: Effect.Effect<Option.Option<A>>, what: string): Effect.Effect<A> =>
  effect.pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.fail(what), onSome: Effect.succeed })),
    Effect.retry(Schedule.spaced(Duration.millis(50)).pipe(Schedule.upTo(Duration.seconds(60)))),
    Effect.orDieWith(() => new Error(`node: ${what} did not happen within 60 s`)),
  )

/** Starts a node for the life of the scope. */
export const make = (
  cp: ControlPlaneHarness,
  options: Options = {},
): Effect.Effect<NodeHarness, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const dataDir = options.overrides?.dataDir ?? (yield* tempDir)
    const token = options.enroll === false ? undefined : yield* nodeToken(cp)
    const apiToken = `mesh-api-${randomBytes(16).toString("hex")}`
    const settings = NodeConfig.make({
      controlPlaneUrl: Option.some(cp.url),
      dataDir,
      apiToken: Redacted.make(apiToken),
      bindAddress: Option.some({ host: "127.0.0.1", port: 0 }),
      socketPath: Option.some(NodeConfig.socketPathIn(dataDir)),
      syncInterval: Duration.seconds(5),
      ...(token === undefined ? {} : { bootstrapToken: Option.some(Redacted.make(token)) }),
      ...(options.file === undefined ? {} : { file: options.file }),
      ...options.overrides,
    })
    const context = yield* Layer.build(
      NodeLive.layer(settings).pipe(
        Layer.provide(Logger.minimumLogLevel(options.logLevel ?? LogLevel.Warning)),
        Layer.provide(options.tracing ?? Tracing.off),
      ),
    )
    const api = Context.get(context, LocalApi)
    const lifecycle = Context.get(context, NodeLifecycle)
    const port = Option.getOrElse(
      Option.map(api.tcp, (a) => a.port),
      () => 0,
    )
    const peerId = waitFor(
      Effect.map(lifecycle.phase, (p) => (p._tag === "Member" ? Option.some(p.peerId) : Option.none())),
      "joining the mesh",
    )
    const connected = waitFor(
      Effect.map(lifecycle.connected, (up) => (up ? Option.some(undefined) : Option.none())),
      "connecting to a router",
    )
    return {
      url: `http://127.0.0.1:${port}`,
      socketPath: Option.getOrElse(api.socket, () => ""),
      apiToken,
      dataDir,
      settings,
      lifecycle,
      peerId,
      connected,
    }
  })

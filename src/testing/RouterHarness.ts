/**
 * Routers in the calling process, enrolled against a harnessed (or any) control plane with a router bootstrap token,
 * listening on loopback. Public test support, like the control-plane harness.
 */
import { Context, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted, type Scope } from "effect"
import * as RouterConfig from "../config/RouterConfig.js"
import * as Tracing from "../layers/observability/Tracing.js"
import * as RouterLive from "../layers/router/RouterLive.js"
import { Membership, type MembershipService } from "../services/member/Membership.js"
import { MeshHost, type MeshHostService } from "../services/mesh/MeshHost.js"
import type { ControlPlaneHarness } from "./ControlPlaneHarness.js"
import * as MeshClient from "./MeshClient.js"

export interface RouterHarness {
  readonly peerId: string
  readonly host: MeshHostService
  readonly membership: MembershipService
  /** The router's addresses, each ending in /p2p/<peerId>. */
  readonly addresses: ReadonlyArray<string>
}

/** A router-role bootstrap token minted through the operator API. */
export const routerToken = (cp: ControlPlaneHarness) =>
  Effect.flatMap(
    MeshClient.json(cp.url, "POST", "/admin/bootstrap-tokens", cp.adminToken, { role: "mesh:role:router" }),
    (answer) =>
      answer.status === 201
        ? Effect.succeed((answer.json as { token: string }).token)
        : Effect.dieMessage(`router token refused: ${answer.status}`),
  )

/** Starts a router for the life of the scope; the control plane must auto-approve or the caller approves. */
export const make = (
  cp: ControlPlaneHarness,
  {
    tracing = Tracing.off,
    ...overrides
  }: Partial<RouterConfig.RouterSettings> & {
    /** Tracing for this router (`Tracing.layer`); off by default. */
    readonly tracing?: Layer.Layer<never>
  } = {},
): Effect.Effect<RouterHarness, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const token = Option.isSome(overrides.bootstrapToken ?? Option.none()) ? undefined : yield* routerToken(cp)
    const settings = RouterConfig.make({
      controlPlaneUrl: cp.url,
      keysSyncInterval: Duration.seconds(5),
      leaseRenewInterval: Duration.seconds(5),
      ...(token === undefined ? {} : { bootstrapToken: Option.some(Redacted.make(token)) }),
      ...overrides,
    })
    // Quiet by default, like the control-plane harness; pass `logLevel` to see the router's info lines.
    const context = yield* Layer.build(
      RouterLive.layer(settings).pipe(
        Layer.provide(Logger.minimumLogLevel(overrides.logLevel ?? LogLevel.Warning)),
        Layer.provide(tracing),
      ),
    )
    const host = Context.get(context, MeshHost)
    return {
      peerId: host.peerId,
      host,
      membership: Context.get(context, Membership),
      addresses: yield* host.addresses,
    }
  })

/**
 * The node's links to the mesh's routers: each router the control plane lists is dialed and authenticated (it must
 * hold `mesh:role:router`), redialed with backoff when it goes away, and asked for a relay slot so peers can reach
 * this node through it. The node is connected to the mesh while at least one router link is authenticated.
 */
import { Context, type Effect, type Option } from "effect"

export interface RouterLink {
  readonly address: string
  readonly peerId: string
  /** An authenticated connection to this router is open. */
  readonly connected: boolean
  /** This node listens on `<address>/p2p-circuit` (the router holds a relay slot for it). */
  readonly relayed: boolean
  readonly lastError: Option.Option<string>
  readonly lastAttemptAtMs: Option.Option<number>
  readonly connectedSinceMs: Option.Option<number>
}

export interface RouterLinksService {
  readonly connected: Effect.Effect<boolean>
  readonly links: Effect.Effect<ReadonlyArray<RouterLink>>
  /** Completes when `connected` next changes. */
  readonly nextChange: Effect.Effect<void>
}

export class RouterLinks extends Context.Tag("mesh/RouterLinks")<RouterLinks, RouterLinksService>() {}

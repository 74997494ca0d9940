/**
 * A member's links to the mesh's routers: each router the control plane lists (but the member itself) is dialed and
 * authenticated (it must hold `mesh:role:router`) and redialed when it goes away. A node also asks each router for a
 * relay slot so peers can reach it through any of them; a router links to the other routers so that the DHT and the
 * gossip hubs of the mesh stay one. The member is connected to the mesh while at least one router link is up.
 */
import { Context, type Effect, type Option, type Stream } from "effect"

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
  /**
   * The peer id of each router as its link comes up (first connect or reconnect), for whoever must place state on
   * it again: a restarted router has lost its provider records and its gossip subscriptions.
   */
  readonly linkUps: Stream.Stream<string>
}

export class RouterLinks extends Context.Tag("mesh/RouterLinks")<RouterLinks, RouterLinksService>() {}

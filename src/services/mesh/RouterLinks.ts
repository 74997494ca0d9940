/**
 * A member's links to the mesh's routers: each router the control plane lists (but the member itself) is dialed and
 * authenticated (it must hold `mesh:role:router`) and redialed when it goes away. A node also holds a relay slot on
 * each connected router, up to its configured number, so peers can reach it through any of them; a router links to the other routers so that the DHT and the
 * gossip hubs of the mesh stay one. The member is connected to the mesh while at least one router link is up.
 */
import { Context, type Effect, type Option, type Stream } from "effect"

export interface RouterLink {
  readonly address: string
  readonly peerId: string
  /** An authenticated connection to this router is open. */
  readonly connected: boolean
  /**
   * The router holds a relay slot for this node now: the node announces a circuit address through it (read live
   * from the host's addresses, so it says what peers are told).
   */
  readonly relayed: boolean
  /** Why the last request for a relay slot on this router failed, until one succeeds. */
  readonly relayError: Option.Option<string>
  readonly lastError: Option.Option<string>
  readonly lastAttemptAtMs: Option.Option<number>
  readonly connectedSinceMs: Option.Option<number>
}

export interface RouterLinksService {
  readonly connected: Effect.Effect<boolean>
  /** How many relay slots this member wants (0 on routers). */
  readonly relaySlots: number
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

/**
 * The admission table: every open connection with its handshake status, and the peers that are authenticated on at
 * least one of them. libp2p calls into it from event listeners and stream handlers, so the bookkeeping is
 * synchronous; only waiting for an outcome is an Effect.
 *
 * A peer is authenticated while one of its open connections passed the handshake; the noise handshake already bound
 * every connection to the peer's key, so one proof covers them all. A peer with no authenticated connection and no
 * handshake under way is "refused" until it connects again, so that waiters give up at once instead of at their
 * deadline.
 */
import type { Connection } from "@libp2p/interface"
import { Deferred, type Duration, Effect, Exit, FiberId, identity } from "effect"
import type { AuthenticatedPeer, ConnectedPeer } from "./Trust.js"

export type Outcome =
  | { readonly _tag: "Authenticated"; readonly peer: AuthenticatedPeer }
  | { readonly _tag: "Refused"; readonly reason: string }

export interface Tracked {
  readonly connection: Connection
  readonly peerId: string
  /** Completed once, by the first verdict on this connection. */
  readonly outcome: Deferred.Deferred<Outcome>
  status: "pending" | "authenticated" | "refused"
  /** When the peer last re-authenticated on this connection (our clock). */
  reauthenticatedAt?: number
}

export type PeerStatus = "authenticated" | "pending" | "refused" | "unknown"

/** How many refused peers are remembered for fast refusals; older ones fall back to waiting out the deadline. */
const MAX_REFUSED = 4096

export class Admissions {
  private readonly connections = new Map<string, Tracked>()
  private readonly byPeer = new Map<string, Set<Tracked>>()
  private readonly authenticated = new Map<string, ConnectedPeer>()
  private sessions = 0
  private readonly refused = new Set<string>()
  private changed = Deferred.unsafeMake<void>(FiberId.none)

  /** The connection's entry, created on first sight. */
  track(connection: Connection): Tracked {
    const known = this.connections.get(connection.id)
    if (known !== undefined) return known
    const tracked: Tracked = {
      connection,
      peerId: connection.remotePeer.toString(),
      outcome: Deferred.unsafeMake<Outcome>(FiberId.none),
      status: "pending",
    }
    this.connections.set(connection.id, tracked)
    let set = this.byPeer.get(tracked.peerId)
    if (set === undefined) {
      set = new Set()
      this.byPeer.set(tracked.peerId, set)
    }
    set.add(tracked)
    this.notify()
    return tracked
  }

  /** The connection closed: it no longer vouches for its peer. */
  untrack(connection: Connection): void {
    const tracked = this.connections.get(connection.id)
    if (tracked === undefined) return
    if (tracked.status === "pending") this.conclude(tracked, { _tag: "Refused", reason: "connection closed" })
    this.connections.delete(connection.id)
    const set = this.byPeer.get(tracked.peerId)
    set?.delete(tracked)
    if (set !== undefined && set.size === 0) this.byPeer.delete(tracked.peerId)
    this.settle(tracked.peerId)
  }

  /** Records a passed handshake (or a re-authentication); false when the connection was already refused. */
  admit(tracked: Tracked, peer: AuthenticatedPeer): boolean {
    if (tracked.status === "refused") return false
    tracked.status = "authenticated"
    const session = this.authenticated.get(tracked.peerId)?.session ?? ++this.sessions
    this.authenticated.set(tracked.peerId, { ...peer, session })
    this.refused.delete(tracked.peerId)
    this.conclude(tracked, { _tag: "Authenticated", peer })
    this.notify()
    return true
  }

  refuse(tracked: Tracked, reason: string): void {
    tracked.status = "refused"
    this.conclude(tracked, { _tag: "Refused", reason })
    this.settle(tracked.peerId)
  }

  /** Refuses every connection of the peer (ban, failed re-verification, disconnect). */
  drop(peerId: string, reason: string): ReadonlyArray<Tracked> {
    const all = [...(this.byPeer.get(peerId) ?? [])]
    for (const tracked of all) {
      tracked.status = "refused"
      this.conclude(tracked, { _tag: "Refused", reason })
    }
    this.authenticated.delete(peerId)
    this.remember(peerId)
    this.notify()
    return all
  }

  /** Replaces the record of a still-authenticated peer (re-verification refreshes `verifiedAtMs`). */
  refresh(peer: AuthenticatedPeer): void {
    const known = this.authenticated.get(peer.peerId)
    if (known !== undefined) this.authenticated.set(peer.peerId, { ...peer, session: known.session })
  }

  isAuthenticated(peerId: string): boolean {
    return this.authenticated.has(peerId)
  }

  get(peerId: string): ConnectedPeer | undefined {
    return this.authenticated.get(peerId)
  }

  list(): ReadonlyArray<ConnectedPeer> {
    return [...this.authenticated.values()]
  }

  /**
   * The peer's open connections that passed the handshake, direct (unlimited) ones first. From the peer's own
   * entries: a request to a peer looks at its connections, not at every connection of the host.
   */
  authenticatedConnections(peerId: string): ReadonlyArray<Connection> {
    const open: Array<Connection> = []
    for (const tracked of this.byPeer.get(peerId) ?? []) {
      if (tracked.status === "authenticated" && tracked.connection.status === "open") open.push(tracked.connection)
    }
    return open.length < 2 ? open : open.sort((a, b) => Number(a.limits !== undefined) - Number(b.limits !== undefined))
  }

  tracked(connection: Connection): Tracked | undefined {
    return this.connections.get(connection.id)
  }

  status(peerId: string): PeerStatus {
    if (this.authenticated.has(peerId)) return "authenticated"
    for (const tracked of this.byPeer.get(peerId) ?? []) if (tracked.status === "pending") return "pending"
    return this.refused.has(peerId) ? "refused" : "unknown"
  }

  /**
   * True once the peer is authenticated; false when its handshakes failed or `bound` passed. A peer we know nothing
   * of yet may be a connection whose open event is still on its way, so it is waited for like a pending one.
   */
  awaitAuthenticated(peerId: string, bound: Duration.DurationInput): Effect.Effect<boolean> {
    const loop: Effect.Effect<boolean> = Effect.suspend(() => {
      // Read the signal before the status: a change between the two would otherwise be missed.
      const signal = this.changed
      const status = this.status(peerId)
      if (status === "authenticated") return Effect.succeed(true)
      if (status === "refused") return Effect.succeed(false)
      return Effect.zipRight(Deferred.await(signal), loop)
    })
    return loop.pipe(Effect.timeoutTo({ duration: bound, onSuccess: identity, onTimeout: () => false }))
  }

  /** Completes at the next change of the table (a connection tracked, admitted, refused or closed). */
  nextChange(): Effect.Effect<void> {
    return Deferred.await(this.changed)
  }

  private conclude(tracked: Tracked, outcome: Outcome): void {
    Deferred.unsafeDone(tracked.outcome, Exit.succeed(outcome))
  }

  /** Recomputes the peer's standing after one of its connections was refused or closed. */
  private settle(peerId: string): void {
    const open = [...(this.byPeer.get(peerId) ?? [])]
    if (!open.some((t) => t.status === "authenticated")) {
      this.authenticated.delete(peerId)
      if (!open.some((t) => t.status === "pending")) this.remember(peerId)
    }
    this.notify()
  }

  private remember(peerId: string): void {
    this.refused.delete(peerId)
    this.refused.add(peerId)
    if (this.refused.size > MAX_REFUSED) {
      const oldest = this.refused.values().next().value
      if (oldest !== undefined) this.refused.delete(oldest)
    }
  }

  private notify(): void {
    const signal = this.changed
    this.changed = Deferred.unsafeMake<void>(FiberId.none)
    Deferred.unsafeDone(signal, Exit.void)
  }
}

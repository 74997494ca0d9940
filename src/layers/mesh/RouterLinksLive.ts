/**
 * RouterLinks over the MeshHost: one fiber keeps a link to every router the control plane lists, but this member. A
 * router that is not connected is dialed (it must authenticate as `mesh:role:router`), and on failure redialed with a
 * doubling backoff, jittered and capped at a few seconds: a router back from a restart must see its members again
 * within seconds, not at the end of a long backoff. Once connected a node asks it for a relay slot. Each link that
 * comes up is announced on `linkUps` and makes the member re-read /info at once (bans, keys and routers it may have
 * missed while apart). When no router can be reached the router list itself may be stale (a router moved, or none
 * was leased yet when this member joined), so /info is re-read, at most every RESYNC_EVERY.
 */
import { Clock, Duration, Effect, Layer, Option, PubSub, Random, Ref, Stream, SubscriptionRef } from "effect"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import type { ConnectedPeer } from "../../p2p/Trust.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { type RouterLink, RouterLinks } from "../../services/mesh/RouterLinks.js"

const FIRST_BACKOFF_MS = 500
/** A dead router gets a dial from each member at most every ~5 s: a SYN answered by a reset, cheap for both. */
const MAX_BACKOFF_MS = 5_000
const JITTER = 0.2
const DIAL_TIMEOUT = Duration.seconds(15)
const RESERVE_TIMEOUT = Duration.seconds(10)
/** The loop looks again at least this often, besides on every change of the host's connections. */
const TICK = Duration.seconds(1)
const RESYNC_EVERY_MS = 10_000

interface LinkState extends Omit<RouterLink, "relayed"> {
  readonly failures: number
  readonly nextAttemptAtMs: number
  readonly relayFailures: number
  readonly nextRelayAtMs: number
}

const peerIdOf = (address: string): string => address.slice(address.lastIndexOf("/p2p/") + 5)

const fresh = (address: string): LinkState => ({
  address,
  peerId: peerIdOf(address),
  connected: false,
  relayError: Option.none(),
  lastError: Option.none(),
  lastAttemptAtMs: Option.none(),
  connectedSinceMs: Option.none(),
  failures: 0,
  nextAttemptAtMs: 0,
  relayFailures: 0,
  nextRelayAtMs: 0,
})

/** The routers this host holds a relay slot on now: those it announces a circuit address through. */
const slotsIn = (addresses: ReadonlyArray<string>): ReadonlySet<string> =>
  new Set(
    addresses.flatMap((address) => {
      const at = address.indexOf("/p2p-circuit")
      if (at < 0) return []
      const relay = address.slice(0, at)
      return [relay.slice(relay.lastIndexOf("/p2p/") + 5)]
    }),
  )

export interface Options {
  /** Nodes hold a relay slot on every router, up to this many; routers link to each other without one (0). */
  readonly relaySlots: number
}

export const make = (options: Options) =>
  Effect.gen(function* () {
    const host = yield* MeshHost
    const membership = yield* Membership
    const links = yield* Ref.make<ReadonlyMap<string, LinkState>>(new Map())
    const connected = yield* SubscriptionRef.make(false)
    const lastResync = yield* Ref.make(0)
    /** The session of every router link last seen up: a changed session is a link that came up again. */
    const up = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
    const ups = yield* Effect.acquireRelease(PubSub.unbounded<string>(), PubSub.shutdown)

    const circuitOf = (link: LinkState) => `${link.address}/p2p-circuit`

    const backoffAfter = (failures: number) =>
      Effect.map(Random.nextRange(1 - JITTER, 1), (jitter) =>
        Math.round(Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (failures - 1)) * jitter),
      )

    /**
     * Asks the router for a relay slot. Bounded in time: a reservation that never answers must not hold up the links
     * to the other routers, which the same loop keeps. A failure is recorded on the link and retried with backoff.
     */
    const reserve = (link: LinkState, now: number): Effect.Effect<LinkState> =>
      host.listen(circuitOf(link)).pipe(
        Effect.timeoutFail({
          duration: RESERVE_TIMEOUT,
          onTimeout: () => ({ reason: `no answer within ${Duration.format(RESERVE_TIMEOUT)}` }),
        }),
        Effect.as<LinkState>({ ...link, relayError: Option.none(), relayFailures: 0, nextRelayAtMs: 0 }),
        Effect.tap(() => Effect.logInfo("relay slot taken").pipe(Effect.annotateLogs({ router: link.peerId }))),
        Effect.catchAll((error) =>
          Effect.gen(function* () {
            const relayFailures = link.relayFailures + 1
            const backoff = yield* backoffAfter(relayFailures)
            yield* Effect.logWarning("router refused a relay slot").pipe(
              Effect.annotateLogs({ router: link.peerId, reason: error.reason, retry_in_ms: backoff }),
            )
            return { ...link, relayError: Option.some(error.reason), relayFailures, nextRelayAtMs: now + backoff }
          }),
        ),
      )

    /** Whether the link wants a slot requested now: connected, none held there, fewer held than wanted, not backing off. */
    const wantsSlot = (link: LinkState, held: ReadonlySet<string>, now: number) =>
      options.relaySlots > 0 &&
      link.connected &&
      !held.has(link.peerId) &&
      held.size < options.relaySlots &&
      link.nextRelayAtMs <= now

    const attempt = (link: LinkState, now: number): Effect.Effect<LinkState> =>
      host.dial(link.address, { requireRole: ROUTER_ROLE }).pipe(
        Effect.timeoutFail({ duration: DIAL_TIMEOUT, onTimeout: () => new Error("dial timed out") }),
        Effect.map(
          (): LinkState => ({
            ...link,
            connected: true,
            lastError: Option.none(),
            lastAttemptAtMs: Option.some(now),
            connectedSinceMs: Option.some(now),
            failures: 0,
            nextAttemptAtMs: 0,
            // A link that comes (back) up may ask for its slot at once.
            nextRelayAtMs: 0,
          }),
        ),
        Effect.tap(() => Effect.logInfo("connected to router").pipe(Effect.annotateLogs({ router: link.peerId }))),
        Effect.catchAll((error) =>
          Effect.gen(function* () {
            const failures = link.failures + 1
            const backoff = yield* backoffAfter(failures)
            return yield* Effect.as(
              Effect.logWarning("router unreachable").pipe(
                Effect.annotateLogs({ router: link.peerId, reason: error.message, retry_in_ms: backoff }),
              ),
              {
                ...link,
                connected: false,
                lastError: Option.some(error.message),
                lastAttemptAtMs: Option.some(now),
                connectedSinceMs: Option.none(),
                failures,
                nextAttemptAtMs: now + backoff,
              },
            )
          }),
        ),
      )

    /** /info at once, unless it was just read. */
    const resync = (now: number, minGapMs: number) =>
      Effect.gen(function* () {
        if (now - (yield* Ref.get(lastResync)) < minGapMs) return
        yield* Ref.set(lastResync, now)
        yield* membership.sync.pipe(Effect.catchAll((error) => Effect.logWarning("router list refresh failed", error)))
      })

    const tick = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const listed = (yield* membership.routers).filter((address) => peerIdOf(address) !== host.peerId)
      const sessionsOf = (peers: ReadonlyArray<ConnectedPeer>) =>
        new Map(peers.filter((p) => p.role === ROUTER_ROLE).map((p) => [p.peerId, p.session]))
      const routers = sessionsOf(yield* host.peers)
      const before = yield* Ref.get(up)
      const previous = yield* Ref.get(links)
      const current = listed.map((address): LinkState => {
        const link = previous.get(address) ?? fresh(address)
        const up = routers.has(link.peerId)
        const relinked = up && before.has(link.peerId) && before.get(link.peerId) !== routers.get(link.peerId)
        if (up === link.connected && !relinked) return link
        return {
          ...link,
          connected: up,
          connectedSinceMs: up ? Option.some(now) : Option.none(),
          // A router that just went away is redialed at once; the backoff applies to failed dials.
          nextAttemptAtMs: up ? link.nextAttemptAtMs : now,
        }
      })
      // The listed routers are visible at once, before any dial ends (a dial can take seconds).
      yield* Ref.set(links, new Map(current.map((link) => [link.address, link])))
      const dialled = yield* Effect.forEach(
        current,
        (link) => (!link.connected && link.nextAttemptAtMs <= now ? attempt(link, now) : Effect.succeed(link)),
        { concurrency: "unbounded" },
      )
      yield* Ref.set(links, new Map(dialled.map((link) => [link.address, link])))
      // Relay slots, on the links up now, as many as are missing: each router that lacks one is asked, the first
      // listed first, so a node with fewer slots than routers spreads over the same ones everywhere it restarts.
      const held = slotsIn(yield* host.addresses)
      const missing = Math.max(0, options.relaySlots - held.size)
      const asking = new Set(
        dialled
          .filter((link) => wantsSlot(link, held, now))
          .slice(0, missing)
          .map((link) => link.address),
      )
      const settled = yield* Effect.forEach(
        dialled,
        (link) => (asking.has(link.address) ? reserve(link, now) : Effect.succeed(link)),
        { concurrency: "unbounded" },
      )
      yield* Ref.set(links, new Map(settled.map((link) => [link.address, link])))
      // Read again after the dials: a link that came up (or went and came back) during them counts now.
      const nowUp = sessionsOf(yield* host.peers)
      yield* Ref.set(up, nowUp)
      const cameUp = [...nowUp].filter(([peer, session]) => before.get(peer) !== session).map(([peer]) => peer)
      yield* PubSub.publishAll(ups, cameUp)
      const anyUp = nowUp.size > 0
      if (anyUp !== (yield* SubscriptionRef.get(connected))) {
        yield* SubscriptionRef.set(connected, anyUp)
        yield* Effect.logInfo(anyUp ? "connected to the mesh" : "not connected to the mesh")
      }
      if (cameUp.length > 0) yield* Effect.forkScoped(resync(now, 1_000))
      else if (!anyUp) yield* resync(now, RESYNC_EVERY_MS)
    })

    yield* tick.pipe(
      Effect.zipRight(Effect.raceFirst(host.nextChange, Effect.sleep(TICK))),
      Effect.forever,
      Effect.forkScoped,
    )

    return RouterLinks.of({
      // Read live, not from the loop's last look: a dial in progress must not hide a router that just went away.
      connected: Effect.map(host.peers, (peers) => peers.some((p) => p.role === ROUTER_ROLE)),
      relaySlots: options.relaySlots,
      // Whether each router is connected, and holds a slot, is read live too; the rest is the loop's record.
      links: Effect.gen(function* () {
        const map = yield* Ref.get(links)
        const peers = yield* host.peers
        const held = slotsIn(yield* host.addresses)
        const up = new Set(peers.filter((p) => p.role === ROUTER_ROLE).map((p) => p.peerId))
        return [...map.values()].map(
          ({ failures, nextAttemptAtMs, relayFailures, nextRelayAtMs, ...link }): RouterLink => ({
            ...link,
            connected: up.has(link.peerId),
            relayed: held.has(link.peerId),
          }),
        )
      }),
      nextChange: connected.changes.pipe(Stream.drop(1), Stream.take(1), Stream.runDrain),
      linkUps: Stream.fromPubSub(ups),
    })
  })

export const layer = (options: Options) => Layer.scoped(RouterLinks, make(options))

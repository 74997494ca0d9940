/**
 * RouterLinks over the MeshHost: one fiber keeps a link to every router the control plane lists. A router that is
 * not connected is dialed (it must authenticate as `mesh:role:router`), and on failure redialed with a doubling
 * backoff; once connected the node asks it for a relay slot. When no router can be reached the router list itself
 * may be stale (a router moved), so /info is re-read, at most every RESYNC_EVERY.
 */
import { Clock, Duration, Effect, Layer, Option, Ref, Stream, SubscriptionRef } from "effect"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { type RouterLink, RouterLinks } from "../../services/node/RouterLinks.js"

const FIRST_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 30_000
const DIAL_TIMEOUT = Duration.seconds(15)
/** The loop looks again at least this often, besides on every change of the host's connections. */
const TICK = Duration.seconds(1)
const RESYNC_EVERY_MS = 10_000

interface LinkState extends RouterLink {
  readonly failures: number
  readonly nextAttemptAtMs: number
}

const peerIdOf = (address: string): string => address.slice(address.lastIndexOf("/p2p/") + 5)

const fresh = (address: string): LinkState => ({
  address,
  peerId: peerIdOf(address),
  connected: false,
  relayed: false,
  lastError: Option.none(),
  lastAttemptAtMs: Option.none(),
  connectedSinceMs: Option.none(),
  failures: 0,
  nextAttemptAtMs: 0,
})

export const layer = Layer.scoped(
  RouterLinks,
  Effect.gen(function* () {
    const host = yield* MeshHost
    const membership = yield* Membership
    const links = yield* Ref.make<ReadonlyMap<string, LinkState>>(new Map())
    const connected = yield* SubscriptionRef.make(false)
    const lastResync = yield* Ref.make(0)

    const circuitOf = (link: LinkState) => `${link.address}/p2p-circuit`

    /** Dials one router and reserves a relay slot on it; the updated state either way. */
    const attempt = (link: LinkState, now: number): Effect.Effect<LinkState> =>
      host.dial(link.address, { requireRole: ROUTER_ROLE }).pipe(
        Effect.timeoutFail({ duration: DIAL_TIMEOUT, onTimeout: () => new Error("dial timed out") }),
        Effect.zipRight(
          host.listen(circuitOf(link)).pipe(
            Effect.as(true),
            Effect.catchAll((error) =>
              Effect.as(
                Effect.logWarning("router refused a relay slot").pipe(
                  Effect.annotateLogs({ router: link.peerId, reason: error.reason }),
                ),
                false,
              ),
            ),
          ),
        ),
        Effect.map(
          (relayed): LinkState => ({
            ...link,
            connected: true,
            relayed,
            lastError: Option.none(),
            lastAttemptAtMs: Option.some(now),
            connectedSinceMs: Option.some(now),
            failures: 0,
            nextAttemptAtMs: 0,
          }),
        ),
        Effect.tap(() => Effect.logInfo("connected to router").pipe(Effect.annotateLogs({ router: link.peerId }))),
        Effect.catchAll((error) => {
          const failures = link.failures + 1
          const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (failures - 1))
          return Effect.as(
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
      )

    const tick = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const listed = yield* membership.routers
      const routers = new Set((yield* host.peers).filter((p) => p.role === ROUTER_ROLE).map((p) => p.peerId))
      const previous = yield* Ref.get(links)
      const current = listed.map((address): LinkState => {
        const link = previous.get(address) ?? fresh(address)
        const up = routers.has(link.peerId)
        if (up === link.connected) return link
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
      const settled = yield* Effect.forEach(
        current,
        (link) => (!link.connected && link.nextAttemptAtMs <= now ? attempt(link, now) : Effect.succeed(link)),
        { concurrency: "unbounded" },
      )
      yield* Ref.set(links, new Map(settled.map((link) => [link.address, link])))
      const up = routers.size > 0 || settled.some((link) => link.connected)
      if (up !== (yield* SubscriptionRef.get(connected))) {
        yield* SubscriptionRef.set(connected, up)
        yield* Effect.logInfo(up ? "connected to the mesh" : "not connected to the mesh")
      }
      if (!up && now - (yield* Ref.get(lastResync)) >= RESYNC_EVERY_MS) {
        yield* Ref.set(lastResync, now)
        yield* membership.sync.pipe(Effect.catchAll((error) => Effect.logWarning("router list refresh failed", error)))
      }
    })

    yield* tick.pipe(
      Effect.zipRight(Effect.raceFirst(host.nextChange, Effect.sleep(TICK))),
      Effect.forever,
      Effect.forkScoped,
    )

    return RouterLinks.of({
      // Read live, not from the loop's last look: a dial in progress must not hide a router that just went away.
      connected: Effect.map(host.peers, (peers) => peers.some((p) => p.role === ROUTER_ROLE)),
      // Whether each router is connected is read live too; the rest is the loop's record of its attempts.
      links: Effect.zipWith(Ref.get(links), host.peers, (map, peers) => {
        const up = new Set(peers.filter((p) => p.role === ROUTER_ROLE).map((p) => p.peerId))
        return [...map.values()].map(({ failures, nextAttemptAtMs, ...link }) => ({
          ...link,
          connected: up.has(link.peerId),
        }))
      }),
      nextChange: connected.changes.pipe(Stream.drop(1), Stream.take(1), Stream.runDrain),
    })
  }),
)

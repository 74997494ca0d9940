/**
 * ToolListings over PeerMcp: listings held in a Ref by (authorization context, peer, service) with the time they stop
 * being fresh. Only fresh ones are kept (a stale one is dropped when the next listing is stored), at most MAX_TOOLS
 * tools in all (the oldest listings go first); a failed listing is not held, and drops what was. Calls that find
 * nothing fresh while a listing of the same key is under way wait for it rather than ask again.
 */
import { createHash } from "node:crypto"
import { Clock, Deferred, type Duration, Effect, Exit, Layer, Option, Redacted, Ref } from "effect"
import * as ListingFreshness from "../../domain/ListingFreshness.js"
import type { Listed } from "../../domain/PeerTools.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { PeerMcp, type PeerMcpError } from "../../services/mcp/PeerMcp.js"
import { type Listing, ToolListings } from "../../services/toollistings/ToolListings.js"

/** Tools held in all, at most: as many as the search index holds. */
export const MAX_TOOLS = 20_000

interface Held {
  readonly tools: ReadonlyArray<Listed>
  readonly receivedAtMs: number
  readonly freshUntilMs: number
}

/** The authorization context a listing was made in: the agent's token (hashed, never kept), or the node's own. */
const contextOf = Effect.map(Effect.serviceOption(CurrentAgent), (agent) =>
  Option.match(agent, {
    onNone: () => "node",
    onSome: (a) => `agent:${createHash("sha256").update(Redacted.value(a.token)).digest("base64url").slice(0, 22)}`,
  }),
)

/** `held` with `key` set to `entry`, without the stale ones, the oldest dropped until MAX_TOOLS fit. */
const store = (held: ReadonlyMap<string, Held>, key: string, entry: Held, nowMs: number) => {
  const kept = [...held].filter(([k, h]) => k !== key && h.freshUntilMs > nowMs)
  kept.sort((a, b) => b[1].receivedAtMs - a[1].receivedAtMs)
  const next = new Map<string, Held>([[key, entry]])
  let tools = entry.tools.length
  for (const [k, h] of kept) {
    if (tools + h.tools.length > MAX_TOOLS) break
    tools += h.tools.length
    next.set(k, h)
  }
  return next
}

export const layer = Layer.effect(
  ToolListings,
  Effect.gen(function* () {
    const mcp = yield* PeerMcp
    const held = yield* Ref.make<ReadonlyMap<string, Held>>(new Map())

    /** Listings being asked of peers now, by key: a call that finds nothing fresh waits for one under way. */
    const asking = yield* Ref.make<ReadonlyMap<string, Deferred.Deferred<Option.Option<Listing>, PeerMcpError>>>(
      new Map(),
    )

    /** Lists anew and holds the result (a failure drops what was held). */
    const list = (key: string, peerId: string, service: string, timeout: Duration.DurationInput) =>
      Effect.gen(function* () {
        const listed = yield* mcp.listTools(peerId, service, timeout).pipe(
          Effect.tapError(() =>
            Ref.update(held, (map) => {
              if (!map.has(key)) return map
              const next = new Map(map)
              next.delete(key)
              return next
            }),
          ),
        )
        // Fresh from when it was received, as the spec counts it.
        const received = yield* Clock.currentTimeMillis
        const entry: Held = {
          tools: listed.tools,
          receivedAtMs: received,
          freshUntilMs: received + ListingFreshness.freshFor(ListingFreshness.ttlOf(listed.ttlMs)),
        }
        yield* Ref.update(held, (map) => store(map, key, entry, received))
        return { tools: listed.tools, fetched: true } satisfies Listing
      })

    /**
     * Lists anew, or waits for the listing of the same key under way (a search that asks gossip and the DHT at once
     * reaches the same service twice). Its caller interrupted, those waiting are told to list on their own (None).
     */
    const shared = (
      key: string,
      peerId: string,
      service: string,
      timeout: Duration.DurationInput,
    ): Effect.Effect<Listing, PeerMcpError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const mine = yield* Deferred.make<Option.Option<Listing>, PeerMcpError>()
          const under = yield* Ref.modify(asking, (map) => {
            const found = map.get(key)
            return found === undefined ? [undefined, new Map(map).set(key, mine)] : [found, map]
          })
          if (under !== undefined) {
            const outcome = yield* restore(Deferred.await(under))
            return Option.isSome(outcome) ? outcome.value : yield* restore(shared(key, peerId, service, timeout))
          }
          const exit = yield* Effect.exit(restore(list(key, peerId, service, timeout)))
          yield* Ref.update(asking, (map) => {
            if (map.get(key) !== mine) return map
            const next = new Map(map)
            next.delete(key)
            return next
          })
          yield* Deferred.done(
            mine,
            Exit.isInterrupted(exit)
              ? Exit.succeed(Option.none())
              : Exit.map(exit, (l): Option.Option<Listing> => Option.some(l)),
          )
          return yield* exit
        }),
      )

    const get = (
      peerId: string,
      service: string,
      timeout: Duration.DurationInput,
      options: { readonly refresh?: boolean } = {},
    ) =>
      Effect.gen(function* () {
        const key = `${yield* contextOf} ${peerId}/${service}`
        const now = yield* Clock.currentTimeMillis
        const found = (yield* Ref.get(held)).get(key)
        // Asked to refresh: a listing begun before the caller's reason to is not waited for.
        if (options.refresh === true) return yield* list(key, peerId, service, timeout)
        if (found !== undefined && now < found.freshUntilMs) return { tools: found.tools, fetched: false }
        return yield* shared(key, peerId, service, timeout)
      })

    return ToolListings.of({ get })
  }),
)

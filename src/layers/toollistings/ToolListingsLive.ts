/**
 * ToolListings over PeerMcp: listings held in a Ref by (authorization context, peer, service) with the time they stop
 * being fresh. Only fresh ones are kept (a stale one is dropped when the next listing is stored), at most MAX_TOOLS
 * tools in all (the oldest listings go first); a failed listing is not held, and drops what was. Two calls that find
 * nothing fresh at the same moment both ask the peer: a listing is one request, and the gateway's tools ask for one
 * service on one peer once per call.
 */
import { createHash } from "node:crypto"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Clock, type Duration, Effect, Layer, Option, Redacted, Ref } from "effect"
import * as ListingFreshness from "../../domain/ListingFreshness.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { PeerMcp } from "../../services/mcp/PeerMcp.js"
import { ToolListings } from "../../services/toollistings/ToolListings.js"

/** Tools held in all, at most: as many as the search index holds. */
export const MAX_TOOLS = 20_000

interface Held {
  readonly tools: ReadonlyArray<Tool>
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
        if (options.refresh !== true && found !== undefined && now < found.freshUntilMs) {
          return { tools: found.tools, fetched: false }
        }
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
        return { tools: listed.tools, fetched: true }
      })

    return ToolListings.of({ get })
  }),
)

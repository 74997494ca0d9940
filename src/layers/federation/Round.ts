/**
 * One round of federation: who serves each federated service now, and what tools they list. Providers come from the
 * DHT (each confirmed by its own catalog), from the last round (asked their catalog again, so a provider that stopped
 * publishing drops out even while its DHT record lingers) and from gossip announcements of the service's tools
 * (which also carry each provider's load). Each provider whose credential attests what the rules and the operator's
 * egress floor require is asked for its tools; one that cannot be reached, or whose policy refuses this node, is
 * left out. Every listing also feeds the tool search index.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Chunk, Duration, Effect, Either, Stream } from "effect"
import * as Federation from "../../domain/Federation.js"
import * as Labels from "../../domain/Labels.js"
import { Discovery } from "../../services/discovery/Discovery.js"
import type { FederatedTool, Provider } from "../../services/federation/Federation.js"
import { PeerMcp } from "../../services/mcp/PeerMcp.js"
import { ToolSearch } from "../../services/toolsearch/ToolSearch.js"

/** The DHT search of one service ends by then with what it found. */
const DHT_TIMEOUT = Duration.seconds(2)
const CATALOG_TIMEOUT = Duration.seconds(3)
const LIST_TIMEOUT = Duration.seconds(3)
const CONCURRENCY = 8
/** Providers of one service kept per round, the least loaded first: each is asked for its tools every round. */
export const MAX_PROVIDERS = 16
/** Federated tools listed at most; past that, the rest (by name) are left out. */
export const MAX_TOOLS = 512

type Labelled = Readonly<Record<string, string>>

interface Listing {
  readonly peerId: string
  readonly service: string
  readonly labels: Labelled
  readonly load: number
  readonly tools: ReadonlyArray<Tool>
}

export interface Input {
  readonly rules: ReadonlyArray<Federation.Rule>
  readonly floor: Labelled
  /** The last round's tools: their providers are asked again, their names looked up in gossip. */
  readonly previous: ReadonlyArray<FederatedTool>
}

/** The confirmed providers of one service with their attested labels: DHT, last round, gossip. */
const providersOf = (service: string, previous: ReadonlyArray<FederatedTool>) =>
  Effect.gen(function* () {
    const discovery = yield* Discovery
    const confirmed = new Map<string, Labelled>()
    const answers = yield* discovery
      .providers({ type: "mcp", name: service, timeout: DHT_TIMEOUT })
      .pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
    for (const answer of answers) {
      if (Either.isLeft(answer.services)) continue
      const found = answer.services.right.find((s) => s.name === service)
      if (found !== undefined) confirmed.set(answer.peerId, found.labels)
    }
    const known = previous.filter((t) => t.service === service)
    const load = new Map<string, number>()
    const candidates = new Set(known.flatMap((t) => t.providers.map((p) => p.peerId)))
    const key = known[0]?.tool
    if (key !== undefined) {
      for (const a of yield* discovery.announcers("mcp", key)) {
        if (a.service !== service) continue
        candidates.add(a.peerId)
        if (!load.has(a.peerId)) load.set(a.peerId, a.activeRequests)
      }
    }
    const unconfirmed = [...candidates].filter((peerId) => !confirmed.has(peerId))
    yield* Effect.forEach(
      unconfirmed,
      (peerId) =>
        discovery.catalogOf(peerId, "mcp", service).pipe(
          Effect.timeout(CATALOG_TIMEOUT),
          Effect.tap((services) => {
            const found = services.find((s) => s.name === service)
            if (found !== undefined) confirmed.set(peerId, found.labels)
          }),
          Effect.ignore,
        ),
      { concurrency: CONCURRENCY, discard: true },
    )
    return [...confirmed]
      .map(([peerId, labels]): Provider => ({ peerId, labels, load: load.get(peerId) ?? 0 }))
      .sort((a, b) => a.load - b.load || (a.peerId < b.peerId ? -1 : 1))
      .slice(0, MAX_PROVIDERS)
  })

/** One provider's tools the rules ask for; none when it cannot be asked. */
const listingOf = (service: string, provider: Provider, input: Input) =>
  Effect.gen(function* () {
    const rules = input.rules.filter(
      (rule) => rule.service === service && Labels.missing(provider.labels, rule.labels).length === 0,
    )
    if (rules.length === 0 || Labels.missing(provider.labels, input.floor).length > 0) return []
    const index = yield* ToolSearch
    const listed = yield* Effect.either((yield* PeerMcp).listTools(provider.peerId, service, LIST_TIMEOUT))
    if (Either.isLeft(listed)) {
      if (listed.left.reason !== "unreachable") yield* index.forget(provider.peerId, service)
      return []
    }
    yield* index.replace(provider.peerId, service, listed.right)
    const tools = listed.right.filter((t) => Federation.wanted(rules, service, t.name, provider.labels))
    return [{ ...provider, service, tools }] satisfies ReadonlyArray<Listing>
  })

/** Listings grouped by (service, tool), named, each listed as its provider with the lowest peer id lists it. */
const assemble = (listings: ReadonlyArray<Listing>): ReadonlyArray<FederatedTool> => {
  const byPair = new Map<string, { service: string; tool: string; offers: Array<[Listing, Tool]> }>()
  for (const listing of listings) {
    for (const tool of listing.tools) {
      const key = `${listing.service}/${tool.name}`
      const pair = byPair.get(key) ?? { service: listing.service, tool: tool.name, offers: [] }
      pair.offers.push([listing, tool])
      byPair.set(key, pair)
    }
  }
  const pairs = [...byPair.values()].sort((a, b) =>
    a.service === b.service ? (a.tool < b.tool ? -1 : 1) : a.service < b.service ? -1 : 1,
  )
  const names = Federation.names(pairs)
  const tools = pairs.map((pair): FederatedTool => {
    const offers = [...pair.offers].sort((a, b) => (a[0].peerId < b[0].peerId ? -1 : 1))
    const [source, listed] = offers[0] as [Listing, Tool]
    const name = Federation.nameOf(names, pair.service, pair.tool) ?? ""
    return {
      name,
      service: pair.service,
      tool: pair.tool,
      definition: Federation.definition(name, pair.service, source.peerId, listed),
      providers: offers.map(([l]) => ({ peerId: l.peerId, labels: l.labels, load: l.load })),
    }
  })
  return tools.sort((a, b) => (a.name < b.name ? -1 : 1)).slice(0, MAX_TOOLS)
}

export const run = (input: Input) =>
  Effect.gen(function* () {
    const services = [...new Set(input.rules.map((rule) => rule.service))]
    const listings = yield* Effect.forEach(
      services,
      (service) =>
        Effect.flatMap(providersOf(service, input.previous), (providers) =>
          Effect.forEach(providers, (provider) => listingOf(service, provider, input), { concurrency: CONCURRENCY }),
        ),
      { concurrency: 4 },
    )
    return assemble(listings.flat(2))
  })

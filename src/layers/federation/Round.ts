/**
 * One round of federation: who serves each federated service now, and what tools they list, asking the network
 * only for what may have changed (Memory says when). Providers are confirmed by their own catalog (one request per
 * peer per round, whatever services need it): those the DHT names, every Memory.SEARCH_EVERY_MS; those announcing
 * the service on gossip that this node has not confirmed, nor seen fail since they last announced; and, between
 * searches, a confirmed provider this node is no longer connected to (it went away, restarted or was banned), which
 * is then listed again as a new one is. Gossip also gives each provider's load and the tools it announces. Each
 * provider whose credential attests what the rules and the operator's egress floor require is asked for its tools
 * when it is new, when it announces other tools, or when its listing went stale (its ttlMs: Memory); one that cannot
 * be reached, or whose policy refuses this node, is left out until it is confirmed again. Every listing also feeds
 * the tool search index. Every definition is judged by tool pinning at every round (so a policy pin applies at the
 * next one): a (service, tool) is offered by the providers PinnedProviders chooses, so a changed definition is never
 * routed to beside a matching one, and a remembered listing older than one this node has seen since
 * (find_remote_tools, describe_remote_tool) is listed again at once.
 */
import { Chunk, Duration, Effect, Either, Option, Stream } from "effect"
import * as Federation from "../../domain/Federation.js"
import * as Labels from "../../domain/Labels.js"
import * as PinnedProviders from "../../domain/PinnedProviders.js"
import { type Announcer, type DiscoveredService, Discovery } from "../../services/discovery/Discovery.js"
import type { FederatedTool, Provider } from "../../services/federation/Federation.js"
import { PeerMcp, type PeerMcpFailure } from "../../services/mcp/PeerMcp.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { ToolSearch } from "../../services/toolsearch/ToolSearch.js"
import * as Judged from "../toolpinning/Judged.js"
import * as Memory from "./Memory.js"
import * as Stale from "./Stale.js"

/** The DHT search of one service ends by then with what it found. */
const DHT_TIMEOUT = Duration.seconds(2)
const CATALOG_TIMEOUT = Duration.seconds(3)
const LIST_TIMEOUT = Duration.seconds(3)
const CONCURRENCY = 8
/**
 * Peers of one service asked their catalog in a round outside a search, at most (those known before first, then
 * the newest announcers); the rest wait for the next round. Bounds a round's length however many peers announce.
 */
const MAX_CHECKS = 32
/** Providers of one service listed, the least loaded first. */
export const MAX_PROVIDERS = 16
/** Federated tools listed at most; past that, the rest (by name) are left out. */
export const MAX_TOOLS = 512

type Labelled = Readonly<Record<string, string>>

interface Listing {
  readonly peerId: string
  readonly service: string
  readonly labels: Labelled
  readonly load: number
  readonly tools: ReadonlyArray<Judged.Judged>
}

export interface Input {
  readonly rules: ReadonlyArray<Federation.Rule>
  readonly floor: Labelled
  /** What the last rounds learnt. */
  readonly memory: Memory.Memory
  readonly nowMs: number
}

export interface Output {
  readonly tools: ReadonlyArray<FederatedTool>
  readonly memory: Memory.Memory
}

/** A peer's published MCP services (or why it could not be asked), asked once per round whatever services need it. */
type Catalogs = (peerId: string) => Effect.Effect<Either.Either<ReadonlyArray<DiscoveredService>, unknown>>

/**
 * The confirmed providers of one service with their attested labels, the peers that did not confirm, and the known
 * providers confirmed again because this node had lost its connection to them (they may have restarted).
 */
const confirm = (
  service: string,
  before: Memory.ServiceMemory,
  announcers: ReadonlyMap<string, Announcer>,
  searching: boolean,
  nowMs: number,
  catalogs: Catalogs,
) =>
  Effect.gen(function* () {
    const discovery = yield* Discovery
    const host = yield* MeshHost
    const confirmed = new Map<string, Labelled>()
    const rejected = new Map(searching ? [] : before.rejected)
    const asked = new Set<string>()
    if (searching) {
      const answers = yield* discovery
        .providers({ type: "mcp", name: service, timeout: DHT_TIMEOUT })
        .pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
      for (const answer of answers) {
        asked.add(answer.peerId)
        const found = Either.isRight(answer.services)
          ? answer.services.right.find((s) => s.name === service)
          : undefined
        if (found !== undefined) confirmed.set(answer.peerId, found.labels)
        else rejected.set(answer.peerId, nowMs)
      }
    }
    const recheck = new Set<string>()
    const returning = new Set<string>()
    for (const peerId of before.providers.keys()) {
      if (confirmed.has(peerId) || asked.has(peerId)) continue
      // Still connected and authenticated: nothing can have changed that the announcements would not show.
      const peer = yield* host.peer(peerId)
      if (Option.isSome(peer) && !searching) confirmed.set(peerId, peer.value.labels)
      else recheck.add(peerId)
      if (Option.isNone(peer)) returning.add(peerId)
    }
    // A peer that announces the service and is not confirmed: asked once, then again only once it announces anew.
    for (const [peerId, announcer] of announcers) {
      const refusedAt = rejected.get(peerId)
      if (confirmed.has(peerId) || asked.has(peerId)) continue
      if (refusedAt === undefined || announcer.receivedAtMs > refusedAt) recheck.add(peerId)
    }
    yield* Effect.forEach(
      searching ? recheck : [...recheck].slice(0, MAX_CHECKS),
      (peerId) =>
        catalogs(peerId).pipe(
          Effect.map((services) => {
            const found = Either.isRight(services) ? services.right.find((s) => s.name === service) : undefined
            if (found !== undefined) confirmed.set(peerId, found.labels)
            else rejected.set(peerId, nowMs)
          }),
        ),
      { concurrency: CONCURRENCY, discard: true },
    )
    return { confirmed, rejected, returning }
  })

/** A provider's listing as remembered for the next round, and judged now. */
interface Judging {
  readonly known: Memory.Known
  readonly judged: ReadonlyArray<Judged.Judged>
}

/**
 * One provider's listing (asked again only when Memory says so, or when this node has seen a newer one), judged, or
 * why it could not be had.
 */
const listingOf = (
  service: string,
  provider: Provider,
  known: Memory.Known | undefined,
  announced: string | undefined,
  input: Input,
) =>
  Effect.gen(function* () {
    if (
      known?.listing !== undefined &&
      !Memory.listingDue(known, announced, input.nowMs) &&
      !(yield* Stale.isStale(provider.peerId, service, known.listing))
    ) {
      return Either.right<Judging>({
        known: { ...known, labels: provider.labels, announced: known.announced ?? announced },
        judged: yield* Judged.listing(provider.peerId, provider.labels, service, known.listing, false),
      })
    }
    const index = yield* ToolSearch
    const listed = yield* Effect.either((yield* PeerMcp).listTools(provider.peerId, service, LIST_TIMEOUT))
    if (Either.isLeft(listed)) {
      if (listed.left.reason !== "unreachable") yield* index.forget(provider.peerId, service)
      return Either.left<PeerMcpFailure>(listed.left.reason)
    }
    const judged = yield* Judged.listing(provider.peerId, provider.labels, service, listed.right.tools)
    yield* index.replace(
      provider.peerId,
      service,
      judged.filter((j) => j.judgement.usable).map((j) => j.tool),
    )
    return Either.right<Judging>({
      known: Memory.listed(provider.peerId, service, known, provider.labels, listed.right, announced, input.nowMs),
      judged,
    })
  })

/** One service: its providers confirmed, the wanted ones listed; its memory for the next round. */
const serviceRound = (service: string, input: Input, catalogs: Catalogs) =>
  Effect.gen(function* () {
    const before = input.memory.get(service) ?? Memory.emptyService
    const searching = Memory.searchDue(before, input.nowMs)
    const announcers = new Map<string, Announcer>()
    for (const a of yield* (yield* Discovery).serviceAnnouncers("mcp", service)) {
      if (!announcers.has(a.peerId)) announcers.set(a.peerId, a)
    }
    const { confirmed, rejected, returning } = yield* confirm(
      service,
      before,
      announcers,
      searching,
      input.nowMs,
      catalogs,
    )
    const providers = [...confirmed]
      .map(([peerId, labels]): Provider => ({ peerId, labels, load: announcers.get(peerId)?.activeRequests ?? 0 }))
      .sort((a, b) => a.load - b.load || (a.peerId < b.peerId ? -1 : 1))
    const remembered = new Map<string, Memory.Known>()
    const listings: Array<Listing> = []
    yield* Effect.forEach(
      providers,
      (provider, i) =>
        Effect.gen(function* () {
          // One this node lost its connection to is listed again, as a new one is.
          const known = returning.has(provider.peerId) ? undefined : before.providers.get(provider.peerId)
          const rules = input.rules.filter(
            (rule) => rule.service === service && Labels.missing(provider.labels, rule.labels).length === 0,
          )
          const wanted =
            i < MAX_PROVIDERS && rules.length > 0 && Labels.missing(provider.labels, input.floor).length === 0
          if (!wanted) {
            // Confirmed but not asked: kept, so that it is not confirmed again each round.
            remembered.set(provider.peerId, { ...(known ?? { listedAtMs: 0 }), labels: provider.labels })
            return
          }
          const keys = announcers.get(provider.peerId)?.keys
          const next = yield* listingOf(
            service,
            provider,
            known,
            keys === undefined ? undefined : Memory.keysOf(keys),
            input,
          )
          if (Either.isLeft(next)) {
            // Unreachable: asked again once it announces anew. Refused (or failed): its announcements say nothing
            // of that, so it waits for the next search.
            rejected.set(provider.peerId, next.left === "unreachable" ? input.nowMs : Number.POSITIVE_INFINITY)
            return
          }
          remembered.set(provider.peerId, next.right.known)
          const tools = next.right.judged.filter((j) => Federation.wanted(rules, service, j.tool.name, provider.labels))
          listings.push({ ...provider, service, tools })
        }),
      { concurrency: CONCURRENCY, discard: true },
    )
    const memory: Memory.ServiceMemory = {
      ...(searching
        ? { searchedAtMs: input.nowMs }
        : before.searchedAtMs === undefined
          ? {}
          : { searchedAtMs: before.searchedAtMs }),
      providers: remembered,
      rejected,
    }
    return { listings, memory }
  })

/**
 * Listings grouped by (service, tool), each offered by the providers tool pinning lets it be chosen from
 * (PinnedProviders; a pair none may offer is left out), named, and listed as the chosen provider with the lowest peer
 * id lists it (marked when its definition changed and the mode only warns).
 */
const assemble = (listings: ReadonlyArray<Listing>): ReadonlyArray<FederatedTool> => {
  const byPair = new Map<string, { service: string; tool: string; offers: Array<[Listing, Judged.Judged]> }>()
  for (const listing of listings) {
    for (const judged of listing.tools) {
      const key = `${listing.service}/${judged.tool.name}`
      const pair = byPair.get(key) ?? { service: listing.service, tool: judged.tool.name, offers: [] }
      pair.offers.push([listing, judged])
      byPair.set(key, pair)
    }
  }
  for (const [key, pair] of byPair) {
    pair.offers = [...PinnedProviders.choose(pair.offers, ([, judged]) => judged.judgement)]
    if (pair.offers.length === 0) byPair.delete(key)
  }
  const pairs = [...byPair.values()].sort((a, b) =>
    a.service === b.service ? (a.tool < b.tool ? -1 : 1) : a.service < b.service ? -1 : 1,
  )
  const names = Federation.names(pairs)
  const tools = pairs.map((pair): FederatedTool => {
    const offers = [...pair.offers].sort((a, b) => (a[0].peerId < b[0].peerId ? -1 : 1))
    const [source, listed] = offers[0] as [Listing, Judged.Judged]
    const name = Federation.nameOf(names, pair.service, pair.tool) ?? ""
    return {
      name,
      service: pair.service,
      tool: pair.tool,
      definition: Federation.definition(
        name,
        pair.service,
        source.peerId,
        listed.tool,
        listed.judgement.pin === "changed",
      ),
      providers: offers.map(([l]) => ({ peerId: l.peerId, labels: l.labels, load: l.load })),
    }
  })
  return tools.sort((a, b) => (a.name < b.name ? -1 : 1)).slice(0, MAX_TOOLS)
}

export const run = (input: Input) =>
  Effect.gen(function* () {
    const services = [...new Set(input.rules.map((rule) => rule.service))]
    const discovery = yield* Discovery
    // One request per peer for every federated service it may serve (a peer's streams opened at once can fail).
    const catalogs: Catalogs = yield* Effect.cachedFunction((peerId: string) =>
      discovery.catalogOf(peerId, "mcp").pipe(Effect.timeout(CATALOG_TIMEOUT), Effect.either),
    )
    const rounds = yield* Effect.forEach(services, (service) => serviceRound(service, input, catalogs), {
      concurrency: 4,
    })
    return {
      tools: assemble(rounds.flatMap((r) => r.listings)),
      memory: new Map(services.map((service, i) => [service, (rounds[i] as (typeof rounds)[number]).memory])),
    } satisfies Output
  })

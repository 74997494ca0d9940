/**
 * What federation remembers between rounds, per federated service: when the DHT was last searched, the providers
 * confirmed by their catalog (with their last listing, the keys they announced then, and when it is due again), and
 * the announcers whose catalog did not confirm them. Rounds stay every 3 s (reading gossip is local), but the remote
 * work they do is decided here: a search every SEARCH_EVERY_MS, a catalog request to a peer that announces the
 * service anew, a `tools/list` only when a provider is new, announced other tools (its list changed), or its last
 * listing went stale: after the listing's `ttlMs`, backed off while relists find nothing new, or RELIST_EVERY_MS for a
 * listing without one (domain/ListingFreshness). Pure: the round reads and writes it.
 */
import * as ListingFreshness from "../../domain/ListingFreshness.js"
import type { Listed } from "../../domain/PeerTools.js"
import type { ToolList } from "../../services/mcp/PeerMcp.js"

/**
 * The DHT is searched for a service's providers at most this often (and each one it names asked its catalog).
 * Why 30 s: it is how long a gossip announcement stays fresh, so a provider that gossip does not reach, or that
 * stopped publishing without dropping its connection, is seen as late as one that stopped announcing; and it keeps
 * the routers' DHT queries and each provider's catalog requests at one per federating node per half minute.
 */
export const SEARCH_EVERY_MS = 30_000
/**
 * A provider whose listing carries no `ttlMs` (a 2025-era server) has its tools asked again this often even when its
 * announcements show no change. Why 60 s: the announcements carry tool names only, so a description or schema that
 * changes under the same names is seen at this pace, the same as the provider's own re-probe of its backend
 * (LocalServicesLive.REPROBE) that would notice it. A listing with a ttl is asked again when the ttl says.
 */
export const RELIST_EVERY_MS = ListingFreshness.DEFAULT_POLL_MS

type Labelled = Readonly<Record<string, string>>

export interface Known {
  /** Attested by its credential. */
  readonly labels: Labelled
  /** Its whole listing (before the rules filter it), when it was listed: as agents see it, and as it was sent. */
  readonly listing?: ReadonlyArray<Listed>
  readonly listedAtMs: number
  /** The keys (tool names) of its announcement when it was listed; none when none was heard. */
  readonly announced?: string | undefined
  /** When it is to be listed again (ListingFreshness.pollDueAt); RELIST_EVERY_MS after listedAtMs when not set. */
  readonly dueAtMs?: number
  /** Relists in a row that found the same listing (the poll backs off). */
  readonly unchanged?: number
}

export interface ServiceMemory {
  /** When the DHT was last searched for the service; none before the first search. */
  readonly searchedAtMs?: number
  /** Confirmed providers, by peer id. */
  readonly providers: ReadonlyMap<string, Known>
  /**
   * Peers that did not confirm (their catalog did not list the service, or they could not be reached or listed), with
   * when: not asked again until the next search or until they announce the service again after that (never, for a
   * peer that refused its listing: infinity).
   */
  readonly rejected: ReadonlyMap<string, number>
}

export type Memory = ReadonlyMap<string, ServiceMemory>

export const empty: Memory = new Map()

export const emptyService: ServiceMemory = { providers: new Map(), rejected: new Map() }

/** An announcement's keys as one comparable string. */
export const keysOf = (keys: ReadonlyArray<string>): string => JSON.stringify(keys)

export const searchDue = (memory: ServiceMemory, nowMs: number): boolean =>
  memory.searchedAtMs === undefined || nowMs - memory.searchedAtMs >= SEARCH_EVERY_MS

/**
 * Whether to ask the provider for its tools now: never listed, its listing due again, or its announcement now names
 * other tools than when it was listed (the list changed, whatever the ttl said). The first announcement heard after a
 * listing is taken as what it listed.
 */
export const listingDue = (known: Known | undefined, announced: string | undefined, nowMs: number): boolean =>
  known?.listing === undefined ||
  nowMs >= (known.dueAtMs ?? known.listedAtMs + RELIST_EVERY_MS) ||
  (announced !== undefined && known.announced !== undefined && announced !== known.announced)

/**
 * What is known of a provider of `service` just listed (`list`, at nowMs), `before` what was known: due again as its
 * ttl says, later while relists keep finding the same tools.
 */
export const listed = (
  peerId: string,
  service: string,
  before: Known | undefined,
  labels: Labelled,
  list: ToolList,
  announced: string | undefined,
  nowMs: number,
): Known => {
  const same = before?.listing !== undefined && JSON.stringify(before.listing) === JSON.stringify(list.tools)
  const unchanged = same ? (before?.unchanged ?? 0) + 1 : 0
  const ttlMs = ListingFreshness.ttlOf(list.ttlMs)
  return {
    labels,
    listing: list.tools,
    listedAtMs: nowMs,
    announced,
    dueAtMs: ListingFreshness.pollDueAt(`${peerId}/${service}`, nowMs, ttlMs, unchanged),
    unchanged,
  }
}

/** Forgets a provider of a service (a call to it failed): the next round confirms it again before listing it. */
export const forget = (memory: Memory, service: string, peerId: string): Memory => {
  const before = memory.get(service)
  if (before === undefined || !before.providers.has(peerId)) return memory
  const providers = new Map(before.providers)
  providers.delete(peerId)
  return new Map(memory).set(service, { ...before, providers })
}

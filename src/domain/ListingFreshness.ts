/**
 * How long a peer's tool listing is good for (MCP 2026-07-28, server/utilities/caching). A modern server's
 * `tools/list` result carries `ttlMs`: the listing is fresh for that long after it was received, then stale; a
 * `list_changed` signal makes it stale at once. The value is the peer's word, so it is bounded: below FLOOR_MS (0,
 * negative) it is FLOOR_MS, above CEILING_MS it is CEILING_MS. Two readers: a listing asked for on demand (an agent's
 * `find_remote_tools`, `describe_remote_tool`) is served from the held one while fresh; federation, which keeps its
 * list current without being asked, polls, and the spec wants a poller to jitter and back off: it lists a provider
 * again after its ttl, twice that after a relist that found nothing new, and so on up to DEFAULT_POLL_MS (never past
 * the ttl itself when that is longer), plus up to a tenth more. Pure.
 */

/** A listing is never held for less (a ttl of 0, the SDK's default, or negative, would mean a fetch per use). */
export const FLOOR_MS = 1_000
/** Nor for longer: a listing a peer says is good for a day is looked at again after ten minutes. */
export const CEILING_MS = 600_000
/**
 * Federation's poll when a listing says nothing (a 2025-era server): the pace of a provider's own re-probe of its
 * backend, which is when it would notice a change (LocalServicesLive.REPROBE). Also where a backed-off poll stops.
 */
export const DEFAULT_POLL_MS = 60_000
/** A poll waits up to this fraction of its interval more, so providers listed together are not polled together. */
export const JITTER = 0.1

/**
 * The listing's ttl in milliseconds, bounded; none when it carried none (or not a number: a server that does not
 * follow the revision). Negative counts as 0 (the spec's rule), then the floor applies.
 */
export const ttlOf = (raw: unknown): number | undefined => {
  if (typeof raw !== "number" || Number.isNaN(raw)) return undefined
  return Math.min(CEILING_MS, Math.max(FLOOR_MS, Math.floor(raw)))
}

/** The smaller of two ttls as sent (a listing of several pages is fresh while its least fresh page is). */
export const least = (a: unknown, b: unknown): number | undefined => {
  const x = typeof a === "number" && !Number.isNaN(a) ? a : undefined
  const y = typeof b === "number" && !Number.isNaN(b) ? b : undefined
  return x === undefined ? y : y === undefined ? x : Math.min(x, y)
}

/**
 * How long a listing asked for on demand is served as held: its ttl; without one, the floor (the spec reads an
 * absent ttl as 0, immediately stale; the floor only merges requests made within a second).
 */
export const freshFor = (ttlMs: number | undefined): number => ttlMs ?? FLOOR_MS

/**
 * Federation's interval before it lists a provider again: its ttl, doubled for each relist in a row that found the
 * listing unchanged (`unchanged`), up to DEFAULT_POLL_MS or the ttl when longer; DEFAULT_POLL_MS without a ttl.
 */
export const pollEvery = (ttlMs: number | undefined, unchanged: number): number => {
  if (ttlMs === undefined) return DEFAULT_POLL_MS
  const most = Math.max(ttlMs, DEFAULT_POLL_MS)
  return Math.min(most, ttlMs * 2 ** Math.min(Math.max(0, unchanged), 16))
}

/** A fraction in [0, 1) fixed by the text (FNV-1a): the same provider and time always get the same jitter. */
export const fractionOf = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) / 2 ** 32
}

/** When federation lists `key` (a provider's service) again, after a listing received at `receivedAtMs`. */
export const pollDueAt = (key: string, receivedAtMs: number, ttlMs: number | undefined, unchanged: number): number => {
  const every = pollEvery(ttlMs, unchanged)
  return receivedAtMs + every + Math.floor(every * JITTER * fractionOf(`${key} ${receivedAtMs}`))
}

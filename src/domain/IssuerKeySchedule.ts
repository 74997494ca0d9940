/**
 * How long the control plane trusts an OIDC issuer's key set (its JWKS) once read, when it reads it again, and how
 * often it may read it at all. Pure rules over unix milliseconds; `layers/enrollment/IssuerKeys.ts` runs them on
 * Effect's Clock.
 *
 * - A read's lifetime is `--oidc-keys-max-age`, shortened (never lengthened) by the answer's `Cache-Control: max-age`
 *   less its `Age`. A provider cannot shorten it below MIN_PROVIDER_MAX_AGE_MS: `max-age=0` would otherwise have us
 *   read the set for every token.
 * - The set is read again when half its lifetime is past, so a key the issuer withdrew stops being accepted within
 *   the lifetime while no token waits on the read, and a failed read has the other half for its retries before the
 *   keys are stale by age.
 * - A failed read keeps the old keys (stale) and is retried after 1 s, doubling up to the lifetime or 30 s, whichever
 *   is less. Stale keys still verify tokens for an hour past their lifetime; then they are expired and no longer used
 *   (tokens from that issuer are answered 503 until it can be read).
 * - Reads, scheduled or asked for by tokens, come out of a token bucket: READ_BURST at once, then one per
 *   READ_INTERVAL_MS, so tokens with made-up key ids cannot turn the control plane into a load generator.
 */

/** Re-read when this fraction of the lifetime is past. */
export const REFRESH_FRACTION = 0.5
/** The shortest lifetime a provider's `Cache-Control` can give. */
export const MIN_PROVIDER_MAX_AGE_MS = 30_000
/**
 * How long stale keys are still used beyond their lifetime while the issuer cannot be read: longer than the ID tokens
 * most issuers give (an hour), short enough that a key withdrawn during an outage is not trusted for a day.
 */
export const STALE_LIMIT_MS = 3_600_000
/** First retry after a failed read; doubles with each failure. */
export const RETRY_FIRST_MS = 1_000
/** Retries are never further apart than this (nor than the lifetime). */
export const RETRY_CAP_MS = 30_000
/** Reads that may start back to back. */
export const READ_BURST = 3
/** Then one read per this long. */
export const READ_INTERVAL_MS = 1_000

/** `max-age` of a Cache-Control header in seconds, less `Age`; undefined when there is none. */
export const providerMaxAgeSeconds = (
  cacheControl: string | undefined,
  age: string | undefined,
): number | undefined => {
  const match = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?\s*(?:,|$)/i.exec(cacheControl ?? "")
  if (match === null) return undefined
  const aged = /^\s*(\d+)\s*$/.exec(age ?? "")
  return Math.max(0, Number(match[1]) - (aged === null ? 0 : Number(aged[1])))
}

/** How long a read stays fresh: the configured max age, or the provider's if shorter (but not below the floor). */
export const lifetimeMs = (maxAgeMs: number, providerSeconds: number | undefined): number =>
  providerSeconds === undefined
    ? maxAgeMs
    : Math.min(maxAgeMs, Math.max(providerSeconds * 1000, MIN_PROVIDER_MAX_AGE_MS))

/** What the control plane holds of an issuer's keys. */
export interface Held {
  readonly readAtMs: number
  readonly lifetimeMs: number
}

export type Freshness = "fresh" | "stale" | "expired"

/** Fresh within the lifetime of the last read, unless a read failed since; expired past the stale limit. */
export const freshness = (held: Held, lastReadFailed: boolean, now: number): Freshness => {
  const age = now - held.readAtMs
  if (age > held.lifetimeMs + STALE_LIMIT_MS) return "expired"
  return lastReadFailed || age > held.lifetimeMs ? "stale" : "fresh"
}

/** When the next scheduled read is due: before the lifetime ends, or, after `failures` failed reads, a retry. */
export const nextReadAt = (held: Held, failures: number, lastFailureMs: number | undefined): number => {
  if (failures === 0 || lastFailureMs === undefined) {
    return held.readAtMs + Math.floor(held.lifetimeMs * REFRESH_FRACTION)
  }
  const cap = Math.min(RETRY_CAP_MS, Math.max(RETRY_FIRST_MS, held.lifetimeMs))
  return lastFailureMs + Math.min(cap, RETRY_FIRST_MS * 2 ** Math.min(failures - 1, 30))
}

/** Reads left to start at once, as of `atMs`. */
export interface Bucket {
  readonly tokens: number
  readonly atMs: number
}

export const fullBucket = (now: number): Bucket => ({ tokens: READ_BURST, atMs: now })

/** Takes one read from the bucket now, or says how long until one is there. */
export const takeRead = (bucket: Bucket, now: number): { readonly bucket: Bucket; readonly waitMs: number } => {
  const tokens = Math.min(READ_BURST, bucket.tokens + Math.max(0, now - bucket.atMs) / READ_INTERVAL_MS)
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, atMs: now }, waitMs: 0 }
  return { bucket: { tokens, atMs: now }, waitMs: Math.ceil((1 - tokens) * READ_INTERVAL_MS) }
}

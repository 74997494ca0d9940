/**
 * Per-client rate limiting of the unauthenticated enrollment routes (`/register`, `/enroll`, `/enroll/status`):
 * a token bucket per client address, `--enroll-rate-limit` per second with bursts of `--enroll-burst`.
 */
import { Context, type Effect, type Option } from "effect"

export interface RateLimiterService {
  /** Takes one request's worth for `client`; Some(seconds to wait) when the client must back off. */
  readonly take: (client: string) => Effect.Effect<Option.Option<number>>
}

export class RateLimiter extends Context.Tag("mesh/RateLimiter")<RateLimiter, RateLimiterService>() {}

export interface Bucket {
  readonly tokens: number
  readonly at: number
}

/** Pure rule: refill by elapsed time, then take one token if there is one. */
export const takeFrom = (
  bucket: Bucket | undefined,
  now: number,
  perSecond: number,
  burst: number,
): { readonly bucket: Bucket; readonly waitSeconds: number | undefined } => {
  const elapsed = bucket === undefined ? 0 : Math.max(0, now - bucket.at) / 1000
  const tokens = Math.min(burst, (bucket?.tokens ?? burst) + elapsed * perSecond)
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, at: now }, waitSeconds: undefined }
  return { bucket: { tokens, at: now }, waitSeconds: (1 - tokens) / perSecond }
}

/** RateLimiter in memory, per replica; buckets of quiet clients are forgotten so the table stays small. */
import { Clock, Effect, Layer, Option } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { type Bucket, RateLimiter, takeFrom } from "../../services/operations/RateLimiter.js"

const MAX_CLIENTS = 50_000

export const layer = Layer.effect(
  RateLimiter,
  Effect.map(ControlPlaneConfig, (config) => {
    const { perSecond, burst } = config.enrollRateLimit
    const buckets = new Map<string, Bucket>()
    return {
      take: (client) =>
        perSecond <= 0
          ? Effect.succeedNone
          : Effect.map(Clock.currentTimeMillis, (now) => {
              const outcome = takeFrom(buckets.get(client), now, perSecond, burst)
              buckets.delete(client)
              // Insertion order is recency order: the first entries are the quietest clients.
              if (buckets.size >= MAX_CLIENTS) buckets.delete(buckets.keys().next().value as string)
              buckets.set(client, outcome.bucket)
              return Option.fromNullable(outcome.waitSeconds)
            }),
    }
  }),
)

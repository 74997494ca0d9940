/**
 * Providers benched after a failure (a busy or unreachable answer): each is left out of rankings until its
 * cooldown ends, on Effect's Clock. Entries whose time has passed are dropped as new ones come in, so the table
 * stays the size of the providers failing now.
 */
import { Clock, Duration, Effect, Ref } from "effect"

export const COOLDOWN = Duration.seconds(15)
export const COOLDOWN_MS = Duration.toMillis(COOLDOWN)

export interface Cooldowns {
  /** Benches the provider (by `Inference.cooldownKey`) from now; returns when it may be tried again, in ms. */
  readonly bench: (key: string) => Effect.Effect<number>
  /** When each benched provider may be tried again, in ms (entries may be past: compare with the clock). */
  readonly current: Effect.Effect<ReadonlyMap<string, number>>
}

export const make: Effect.Effect<Cooldowns> = Effect.map(Ref.make<ReadonlyMap<string, number>>(new Map()), (table) => ({
  bench: (key) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const until = now + COOLDOWN_MS
      return Ref.modify(table, (entries) => {
        const next = new Map([...entries].filter(([, at]) => at > now))
        next.set(key, until)
        return [until, next]
      })
    }),
  current: Ref.get(table),
}))

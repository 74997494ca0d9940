/**
 * Waits, in real time, until an effect's result satisfies a predicate. For tests under TestClock where advancing the
 * clock wakes a fiber that then does real I/O (a database write) the test must see the end of.
 */
import { Effect, TestServices } from "effect"

export const eventually = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  predicate: (a: A) => boolean,
  options: { readonly timeoutMs?: number; readonly what?: string } = {},
): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const attempts = Math.ceil((options.timeoutMs ?? 10_000) / 20)
    let last: A | undefined
    for (let i = 0; i < attempts; i++) {
      last = yield* effect
      if (predicate(last)) return last
      yield* TestServices.provideLive(Effect.sleep("20 millis"))
    }
    return yield* Effect.dieMessage(
      `condition not reached: ${options.what ?? "eventually"} (last: ${JSON.stringify(last)})`,
    )
  })

/**
 * A clock that runs in real time and can jump forward, as a machine's clock does after a suspend: `jump` adds to the
 * time every reader sees and wakes every sleep that has come due, all at once. A sleep that is not due yet keeps
 * waiting for the rest of its time, in real time.
 *
 * For soak tests that cover days of a whole mesh in seconds. TestClock cannot: it stands still between adjustments
 * (so whatever waits for one of the mesh's own timeouts waits forever) and wakes sleeps one at a time, waiting after
 * each for every fiber to suspend, so a loop that ticks every second costs 86,400 rounds a simulated day. Here a loop
 * that ticks every second wakes once per jump, and real timeouts still bound what happens between jumps.
 *
 * Provide it with `Effect.withClock`. It lives with the tests, not in src/: a clock has to read the machine's time.
 */
import { Clock, Duration, Effect } from "effect"

interface Sleeper {
  readonly due: number
  readonly wake: () => void
  timer: ReturnType<typeof setTimeout> | undefined
}

export interface JumpClock extends Clock.Clock {
  /** Moves the time forward and wakes the sleeps that came due. */
  readonly jump: (duration: Duration.DurationInput) => Effect.Effect<void>
}

/** A jump clock whose time starts at `startMs`. */
export const make = (startMs: number): JumpClock => {
  // A clock is read synchronously (unsafeCurrentTimeMillis) by the runtime: its state cannot live in an Effect Ref.
  let offset = startMs - Date.now()
  const sleepers = new Set<Sleeper>()
  const now = () => Date.now() + offset

  const arm = (sleeper: Sleeper) => {
    if (sleeper.timer !== undefined) clearTimeout(sleeper.timer)
    sleeper.timer = setTimeout(sleeper.wake, Math.max(0, sleeper.due - now()))
  }

  const sleep = (duration: Duration.Duration): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      const sleeper: Sleeper = {
        due: now() + Duration.toMillis(duration),
        timer: undefined,
        wake: () => {
          if (!sleepers.delete(sleeper)) return
          if (sleeper.timer !== undefined) clearTimeout(sleeper.timer)
          resume(Effect.void)
        },
      }
      sleepers.add(sleeper)
      arm(sleeper)
      return Effect.sync(() => {
        sleepers.delete(sleeper)
        if (sleeper.timer !== undefined) clearTimeout(sleeper.timer)
      })
    })

  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: now,
    currentTimeMillis: Effect.sync(now),
    unsafeCurrentTimeNanos: () => BigInt(now()) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(now()) * 1_000_000n),
    sleep,
    jump: (duration) =>
      Effect.sync(() => {
        offset += Duration.toMillis(duration)
        const time = now()
        for (const sleeper of [...sleepers]) {
          if (sleeper.due <= time) sleeper.wake()
          else arm(sleeper)
        }
      }),
  }
}

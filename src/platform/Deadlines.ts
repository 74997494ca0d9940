/**
 * Many deadlines on one fiber. A deadline is a callback due after a duration, counted in ticks of one sweeper fiber
 * that sleeps on Effect's Clock (so a TestClock drives it). Setting and cancelling a deadline is synchronous and
 * costs no fiber and no timer of its own, which is what a per-stream or per-request deadline on a hot path needs;
 * the price is lateness of up to one tick.
 */
import { Duration, Effect, type Scope } from "effect"

export type Cancel = () => void

export interface Deadlines {
  /** Calls `late` once `duration` has passed, unless cancelled first; an infinite duration never falls due. */
  readonly after: (duration: Duration.Duration, late: () => void) => Cancel
}

/**
 * A deadline that several waits in turn can watch, where racing the work against a timer would cost fibers: each
 * wait (an `Effect.async`) watches it while it waits and gives up when it falls due.
 */
export interface Expiry {
  readonly expired: () => boolean
  /** Calls `late` when the deadline falls due, at once if it has; the function returned stops watching. */
  readonly watch: (late: () => void) => Cancel
  /** Ends the deadline (the work is done): nothing watching is called after this. */
  readonly cancel: Cancel
}

/** An Expiry falling due `duration` from now. */
export const expiry = (deadlines: Deadlines, duration: Duration.Duration): Expiry => {
  let expired = false
  const watchers = new Set<() => void>()
  const cancel = deadlines.after(duration, () => {
    expired = true
    const due = [...watchers]
    watchers.clear()
    for (const late of due) late()
  })
  return {
    expired: () => expired,
    watch: (late) => {
      if (expired) {
        late()
        return () => undefined
      }
      // Its own entry, so that a callback watching twice is stopped once each.
      const entry = () => late()
      watchers.add(entry)
      return () => {
        watchers.delete(entry)
      }
    },
    cancel: () => {
      watchers.clear()
      cancel()
    },
  }
}

/** Deadlines by the tick they fall due in. Its state belongs to the sweeper that advances it. */
class Wheel {
  private tick = 0
  private readonly due = new Map<number, Set<() => void>>()

  constructor(private readonly tickMs: number) {}

  after(duration: Duration.Duration, late: () => void): Cancel {
    if (!Duration.isFinite(duration)) return () => undefined
    // Never early: the tick in progress counts as not yet begun.
    const at = this.tick + 1 + Math.ceil(Duration.toMillis(duration) / this.tickMs)
    let bucket = this.due.get(at)
    if (bucket === undefined) {
      bucket = new Set()
      this.due.set(at, bucket)
    }
    const entry = () => late()
    bucket.add(entry)
    return () => {
      bucket.delete(entry)
    }
  }

  /** One tick passes: what fell due is called, each on its own so one that throws does not hold back the rest. */
  advance(): ReadonlyArray<unknown> {
    this.tick += 1
    const bucket = this.due.get(this.tick)
    if (bucket === undefined) return []
    this.due.delete(this.tick)
    const failures: Array<unknown> = []
    for (const late of bucket) {
      try {
        late()
      } catch (error) {
        failures.push(error)
      }
    }
    return failures
  }
}

/** Deadlines swept every `tick` until the scope closes. */
export const make = (tick: Duration.Duration): Effect.Effect<Deadlines, never, Scope.Scope> =>
  Effect.gen(function* () {
    const wheel = new Wheel(Math.max(1, Duration.toMillis(tick)))
    yield* Effect.sleep(tick).pipe(
      Effect.zipRight(Effect.sync(() => wheel.advance())),
      Effect.flatMap((failures) =>
        failures.length === 0 ? Effect.void : Effect.logError("a deadline's callback failed", failures),
      ),
      Effect.forever,
      Effect.forkScoped,
    )
    return { after: (duration, late) => wheel.after(duration, late) }
  })

/** A sweeper's tick for these deadlines: a tenth of the shortest finite one, between 10 ms and a second. */
export const tickFor = (durations: ReadonlyArray<Duration.Duration>): Duration.Duration => {
  const finite = durations.filter(Duration.isFinite).map(Duration.toMillis)
  const shortest = finite.length === 0 ? 10_000 : Math.min(...finite)
  return Duration.millis(Math.min(1000, Math.max(10, shortest / 10)))
}

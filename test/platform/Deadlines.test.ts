/**
 * Deadlines swept by one fiber on the Clock: what falls due is called once its duration has passed (never before),
 * a cancelled or infinite one never is, and one callback that throws does not hold back the others.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Deadlines from "../../src/platform/Deadlines.js"

const TICK = Duration.millis(100)

it.scoped("a deadline falls due after its duration, not before, and once", () =>
  Effect.gen(function* () {
    const deadlines = yield* Deadlines.make(TICK)
    const calls: Array<string> = []
    deadlines.after(Duration.millis(250), () => calls.push("a"))
    yield* TestClock.adjust(Duration.millis(200))
    expect(calls).toEqual([])
    yield* TestClock.adjust(Duration.millis(200))
    expect(calls).toEqual(["a"])
    yield* TestClock.adjust(Duration.seconds(5))
    expect(calls).toEqual(["a"])
  }),
)

it.scoped("a deadline set mid-tick is not early", () =>
  Effect.gen(function* () {
    const deadlines = yield* Deadlines.make(TICK)
    const calls: Array<string> = []
    yield* TestClock.adjust(Duration.millis(150))
    deadlines.after(Duration.millis(100), () => calls.push("b"))
    // 50 ms later the sweeper ticks, but only 50 of the 100 ms have passed.
    yield* TestClock.adjust(Duration.millis(50))
    expect(calls).toEqual([])
    yield* TestClock.adjust(Duration.millis(200))
    expect(calls).toEqual(["b"])
  }),
)

it.scoped("cancelled and infinite deadlines never fall due; a callback that throws holds back no other", () =>
  Effect.gen(function* () {
    const deadlines = yield* Deadlines.make(TICK)
    const calls: Array<string> = []
    const cancel = deadlines.after(Duration.millis(100), () => calls.push("cancelled"))
    deadlines.after(Duration.infinity, () => calls.push("infinite"))
    deadlines.after(Duration.millis(100), () => {
      throw new Error("boom")
    })
    deadlines.after(Duration.millis(100), () => calls.push("kept"))
    cancel()
    yield* TestClock.adjust(Duration.seconds(2))
    expect(calls).toEqual(["kept"])
  }),
)

it("a tick is a tenth of the shortest finite deadline, between 10 ms and a second", () => {
  expect(Duration.toMillis(Deadlines.tickFor([Duration.seconds(3), Duration.infinity]))).toBe(300)
  expect(Duration.toMillis(Deadlines.tickFor([Duration.minutes(10), Duration.seconds(30)]))).toBe(1000)
  expect(Duration.toMillis(Deadlines.tickFor([Duration.millis(5)]))).toBe(10)
  expect(Duration.toMillis(Deadlines.tickFor([Duration.infinity]))).toBe(1000)
})

it.scoped("an expiry calls what watches it when it falls due, at once when it has, and nothing once cancelled", () =>
  Effect.gen(function* () {
    const deadlines = yield* Deadlines.make(TICK)
    const calls: Array<string> = []
    const expiry = Deadlines.expiry(deadlines, Duration.millis(250))
    expiry.watch(() => calls.push("first wait"))
    const stop = expiry.watch(() => calls.push("stopped"))
    stop()
    yield* TestClock.adjust(Duration.millis(200))
    expect(expiry.expired()).toBe(false)
    expect(calls).toEqual([])
    yield* TestClock.adjust(Duration.millis(200))
    expect(expiry.expired()).toBe(true)
    expect(calls).toEqual(["first wait"])
    // A wait that starts after the deadline gives up at once.
    expiry.watch(() => calls.push("late wait"))
    expect(calls).toEqual(["first wait", "late wait"])

    const done = Deadlines.expiry(deadlines, Duration.millis(100))
    done.watch(() => calls.push("after the work ended"))
    done.cancel()
    yield* TestClock.adjust(Duration.seconds(2))
    expect(done.expired()).toBe(false)
    expect(calls).toEqual(["first wait", "late wait"])
  }),
)

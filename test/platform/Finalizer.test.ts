/**
 * Resources released with their scope: the release runs once when the scope closes (the work done, failed or
 * interrupted), none is added when the acquisition failed, and an interruption cannot land between acquiring and
 * registering the release.
 */
import { expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Scope } from "effect"
import * as Finalizer from "../../src/platform/Finalizer.js"

it.effect("the release runs once, when the scope closes, whatever ended the work", () =>
  Effect.gen(function* () {
    const released: Array<string> = []
    for (const [name, exit] of [
      ["done", Exit.void],
      ["failed", Exit.fail("boom")],
      ["interrupted", Exit.interrupt(FiberId.none)],
    ] as const) {
      const scope = yield* Scope.make()
      const got = yield* Finalizer.acquireSync(
        () => name,
        (a) => released.push(a),
      ).pipe(Scope.extend(scope))
      expect(got).toBe(name)
      expect(released).not.toContain(name)
      yield* Scope.close(scope, exit)
      yield* Scope.close(scope, exit)
    }
    expect(released).toEqual(["done", "failed", "interrupted"])
  }),
)

it.effect("a failed acquisition leaves nothing to release", () =>
  Effect.gen(function* () {
    const released: Array<string> = []
    const outcome = yield* Effect.scoped(
      Finalizer.acquire(Effect.fail("refused"), () => Effect.sync(() => released.push("never"))),
    ).pipe(Effect.either)
    expect(outcome._tag).toBe("Left")
    expect(released).toEqual([])
  }),
)

it.effect("an interruption during the acquisition waits for it, and the release still runs", () =>
  Effect.gen(function* () {
    const started = yield* Deferred.make<void>()
    const proceed = yield* Deferred.make<void>()
    const released: Array<string> = []
    const fiber = yield* Effect.scoped(
      Finalizer.acquire(
        Effect.zipRight(Deferred.succeed(started, undefined), Effect.as(Deferred.await(proceed), "socket")),
        (a) => Effect.sync(() => released.push(a)),
      ).pipe(Effect.zipRight(Effect.never)),
    ).pipe(Effect.fork)
    yield* Deferred.await(started)
    const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
    yield* Deferred.succeed(proceed, undefined)
    yield* Fiber.join(interrupting)
    expect(released).toEqual(["socket"])
  }),
)

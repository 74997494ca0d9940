/**
 * Resources a hot path opens per request and lets go with the scope. `Effect.acquireRelease` keeps the acquiring
 * fiber's refs and, when it releases, diffs them against the closing fiber's twice to run the release as the
 * acquirer: with the node's few dozen fiber refs that bookkeeping cost more than the resource. These add the release
 * to the scope as it is, so it runs with the closing fiber's refs: a release that only counts or destroys something
 * (no logging, no span) loses nothing by that.
 */
import { Effect, Scope } from "effect"

/** As `Effect.acquireRelease` (the acquisition uninterruptible), for a release that needs no fiber refs. */
export const acquire = <A, E, R>(
  acquisition: Effect.Effect<A, E, R>,
  release: (a: A) => Effect.Effect<unknown>,
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.uninterruptible(
    Effect.flatMap(Effect.scope, (scope) => Effect.tap(acquisition, (a) => Scope.addFinalizer(scope, release(a)))),
  )

/** `acquire` of something made and let go synchronously. */
export const acquireSync = <A>(make: () => A, release: (a: A) => void): Effect.Effect<A, never, Scope.Scope> =>
  acquire(Effect.sync(make), (a) => Effect.sync(() => release(a)))

/**
 * A member process that can be stopped and started again (a router restart, a node that comes back), each run in a
 * scope of its own under the caller's, so that stopping one run leaves the rest of the test standing.
 */
import { Effect, ExecutionStrategy, Exit, Ref, Scope } from "effect"
import type * as MemberProcess from "./MemberProcess.js"

export interface Restartable {
  /** Stops the running process, if any, and starts a new one. */
  readonly start: Effect.Effect<void>
  /** SIGTERM, waits for the exit. */
  readonly stop: Effect.Effect<void>
  /** SIGKILL, waits for the exit. */
  readonly kill: Effect.Effect<void>
  /** What the running process wrote so far; empty while stopped. */
  readonly output: Effect.Effect<string>
  /** The running process's id; -1 while stopped. */
  readonly pid: Effect.Effect<number>
}

export const make = (
  spawn: Effect.Effect<MemberProcess.MemberProcess, never, Scope.Scope>,
): Effect.Effect<Restartable, never, Scope.Scope> =>
  Effect.gen(function* () {
    const outer = yield* Effect.scope
    const current = yield* Ref.make<{ scope: Scope.CloseableScope; process: MemberProcess.MemberProcess } | undefined>(
      undefined,
    )
    const stop = Effect.gen(function* () {
      const running = yield* Ref.getAndSet(current, undefined)
      if (running !== undefined) yield* Scope.close(running.scope, Exit.void)
    })
    const kill = Effect.gen(function* () {
      const running = yield* Ref.getAndSet(current, undefined)
      if (running === undefined) return
      yield* running.process.kill
      yield* Scope.close(running.scope, Exit.void)
    })
    const start = Effect.gen(function* () {
      yield* stop
      const scope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
      const process = yield* spawn.pipe(Scope.extend(scope))
      yield* Ref.set(current, { scope, process })
    })
    return {
      start,
      stop,
      kill,
      output: Effect.flatMap(Ref.get(current), (running) =>
        running === undefined ? Effect.succeed("") : running.process.output,
      ),
      pid: Effect.map(Ref.get(current), (running) => running?.process.pid ?? -1),
    }
  })

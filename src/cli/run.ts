/**
 * Runs a mesh command as a process: parses argv, and turns every failure into one line on stderr and a non-zero exit
 * code (2 for usage errors, 1 for failures at run time) instead of a stack trace.
 */
import { Command, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Data, Effect, Exit } from "effect"
import pkg from "../../package.json" with { type: "json" }

export const EXIT_USAGE = 2

/** A bad invocation found after parsing (a missing required value, an unreadable file): exit 2 with its reason. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

export const runCommand = <Name extends string, E, A>(
  name: Name,
  command: Command.Command<Name, NodeContext.NodeContext, E, A>,
  argv: ReadonlyArray<string>,
): void => {
  const program = Command.run(command, { name, version: pkg.version })(argv)
  NodeRuntime.runMain(
    program.pipe(
      Effect.provide(NodeContext.layer),
      Effect.exit,
      Effect.flatMap((exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) return
          const failure = Cause.failureOption(exit.cause)
          if (failure._tag === "Some" && ValidationError.isValidationError(failure.value)) {
            // @effect/cli has already printed the reason on stderr.
            process.exitCode = EXIT_USAGE
            return
          }
          if (failure._tag === "Some" && failure.value instanceof UsageError) {
            process.stderr.write(`${name}: ${failure.value.message}\n`)
            process.exitCode = EXIT_USAGE
            return
          }
          if (Cause.isInterruptedOnly(exit.cause)) return
          process.stderr.write(`${name}: ${describe(exit.cause)}\n`)
          process.exitCode = 1
        }),
      ),
    ) as Effect.Effect<void, never, never>,
    { disableErrorReporting: true, disablePrettyLogger: true },
  )
}

const describe = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const message = error instanceof Error ? error.message : String(error)
  return message.split("\n")[0] ?? "failed"
}

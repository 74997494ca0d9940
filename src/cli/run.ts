/**
 * Runs a mesh command as a process: parses argv, and turns every failure into one line on stderr and a non-zero exit
 * code (2 for usage errors, 1 for failures at run time) instead of a stack trace. `--help` and unknown flags are
 * answered here, before @effect/cli (see Help.ts), and `--log-level` goes to the command's own flag.
 */
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, ConfigProvider, Data, Effect, Exit, Option } from "effect"
import pkg from "../../package.json" with { type: "json" }
import * as Colour from "./Colour.js"
import * as Help from "./Help.js"

export const EXIT_USAGE = 2

/** A bad invocation found after parsing (a missing required value, an unreadable file): exit 2 with its reason. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

export const runCommand = <Name extends string, E, A>(
  name: Name,
  command: Command.Command<Name, NodeContext.NodeContext, E, A>,
  argv: ReadonlyArray<string>,
): void => {
  const [runtime = "node", script = name, ...args] = argv
  const { rest, logLevel } = takeLogLevel(args)
  const tree = Help.tree(command)
  const { node, path } = Help.commandAt(tree, rest)
  // A command that only groups others (`mesh-node`) does nothing by itself: its help says what it groups.
  const bare = rest.filter((arg) => !arg.startsWith("-")).length === path.length - 1
  if (wantsHelp(rest) || (bare && node.children.length > 0 && !Help.runsItself(node))) {
    process.stdout.write(
      `${Colour.forStream(process.stdout, HelpDoc.toAnsiText(Help.render(path, node, pkg.version)))}\n`,
    )
    return
  }
  const unknown = Help.unknownFlag(tree, rest)
  if (Option.isSome(unknown)) {
    const { flag, command: at, closest } = unknown.value
    const hint = Option.match(closest, { onNone: () => "", onSome: (known) => ` (did you mean ${known}?)` })
    process.stderr.write(`${name}: unknown flag ${flag} for ${at}${hint}; see ${at} --help\n`)
    process.exitCode = EXIT_USAGE
    return
  }
  const program = Command.run(command, { name, version: pkg.version, executable: name })([runtime, script, ...rest])
  NodeRuntime.runMain(
    program.pipe(
      Colour.plainWhereNeeded,
      // The command's own --log-level reads MESH_LOG_LEVEL when the flag is absent: the flag given is passed there.
      Option.isSome(logLevel)
        ? Effect.withConfigProvider(
            ConfigProvider.fromMap(new Map([["MESH_LOG_LEVEL", logLevel.value]])).pipe(
              ConfigProvider.orElse(() => ConfigProvider.fromEnv()),
            ),
          )
        : (effect) => effect,
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
    {
      disableErrorReporting: true,
      disablePrettyLogger: true,
      // On a signal the process exits with the code the program chose (a join left waiting: 130), else 0.
      teardown: (exit, onExit) =>
        onExit(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : Number(process.exitCode ?? 0)),
    },
  )
}

const describe = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const message = error instanceof Error ? error.message : String(error)
  return message.split("\n")[0] ?? "failed"
}

const wantsHelp = (args: ReadonlyArray<string>) => {
  const end = args.indexOf("--")
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === "--help" || arg === "-h")
}

/**
 * Takes `--log-level <level>` (or `=level`) out of argv. @effect/cli has a `--log-level` of its own, read before the
 * command's flags, whose levels are not ours and whose setting the command's logger replaces: given to it,
 * `--log-level error` changed nothing. The last one given wins, as for any flag.
 */
export const takeLogLevel = (args: ReadonlyArray<string>) => {
  const rest: Array<string> = []
  let logLevel = Option.none<string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ""
    if (arg === "--") {
      rest.push(...args.slice(i))
      break
    }
    if (arg === "--log-level" && i + 1 < args.length) {
      logLevel = Option.some(args[i + 1] ?? "")
      i++
    } else if (arg.startsWith("--log-level=")) {
      logLevel = Option.some(arg.slice("--log-level=".length))
    } else {
      rest.push(arg)
    }
  }
  return { rest, logLevel }
}

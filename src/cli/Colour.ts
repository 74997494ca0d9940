/**
 * Colour only for a person at a terminal: never into a pipe or a file, and never when NO_COLOR is set
 * (https://no-color.org: present and not empty). @effect/cli colours its help and errors regardless.
 */
import { Console, type Effect } from "effect"

export const allowed = (stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean =>
  stream.isTTY === true && (env.NO_COLOR ?? "") === ""

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences start with ESC.
const ESCAPES = /\u001b\[[0-9;]*[A-Za-z]/g

export const strip = (text: string): string => text.replace(ESCAPES, "")

const plainWhere = (colour: boolean) => (args: ReadonlyArray<unknown>) =>
  colour ? args : args.map((arg) => (typeof arg === "string" ? strip(arg) : arg))

/** Text for stdout or stderr: without escape codes when that stream may not have them. */
export const forStream = (stream: NodeJS.WriteStream, text: string): string => (allowed(stream) ? text : strip(text))

/** `base`, writing without escape codes to whichever of stdout and stderr may not have them. */
const wrap = (base: Console.Console): Console.Console => {
  const out = plainWhere(allowed(process.stdout))
  const err = plainWhere(allowed(process.stderr))
  return {
    ...base,
    log: (...args) => base.log(...out(args)),
    info: (...args) => base.info(...out(args)),
    error: (...args) => base.error(...err(args)),
    warn: (...args) => base.warn(...err(args)),
    unsafe: {
      ...base.unsafe,
      log: (...args) => base.unsafe.log(...out(args)),
      info: (...args) => base.unsafe.info(...out(args)),
      error: (...args) => base.unsafe.error(...err(args)),
      warn: (...args) => base.unsafe.warn(...err(args)),
    },
  }
}

/** Runs `effect` with the current console wrapped as above. */
export const plainWhereNeeded = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Console.consoleWith((base) => Console.withConsole(effect, wrap(base)))

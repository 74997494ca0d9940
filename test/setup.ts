// Loaded before every test file, as every entry point loads it before anything else.
import "../src/platform/biscuit-wasm.js"
import { setPriority } from "node:os"
import { Effect, Either, Exit, Option } from "effect"
import { beforeEach } from "vitest"
import { getFn, setFn } from "vitest/suite"

// Workers (and the programs they start) run at the normal priority, behind the runner (vitest.config.ts).
try {
  setPriority(0)
} catch {}

/**
 * A test written with plain `it` whose function returns an Effect passes without running a line of it: vitest awaits
 * the Effect as a plain value. Every test's function is wrapped here, before it runs, to fail such a test. (Option,
 * Either and Exit are Effects too, and a test built with `it.effect` may end with one: those are values, not work.)
 */
const checked = new WeakSet<object>()

beforeEach(({ task }) => {
  const fn = getFn(task)
  if (checked.has(fn)) return
  // The test's context (expect, task, signal, ...) is passed on: tests and @effect/vitest read it.
  const wrapped = async (...context: Array<unknown>): Promise<void> => {
    const result: unknown = await (fn as (...args: Array<unknown>) => unknown)(...context)
    if (Effect.isEffect(result) && !Option.isOption(result) && !Either.isEither(result) && !Exit.isExit(result)) {
      throw new Error("this test returned an Effect that never ran: write it with it.effect, it.scoped or it.live")
    }
  }
  checked.add(wrapped)
  setFn(task, wrapped)
})

/**
 * `mesh-router` or `mesh-node run` as a child process, run from source the way an operator runs the built binary.
 * Nothing is shared with the test but the files it is given and the network. The scope stops it (SIGTERM, then
 * SIGKILL after 15 s) if it is still running when it closes.
 */
import { spawn } from "node:child_process"
import { join } from "node:path"
import { Deferred, Duration, Effect, Option, type Scope } from "effect"
import { nodeArgs } from "../support/processes.js"
import type { ProcessExit } from "./ControlPlaneProcess.js"

const root = join(import.meta.dirname, "..", "..")

const STOP_TIMEOUT = Duration.seconds(15)
/** Output kept for failure messages. */
const MAX_OUTPUT_CHARS = 400_000

export interface MemberProcess {
  readonly pid: number
  readonly running: Effect.Effect<boolean>
  /** What the process wrote on stdout and stderr so far (its logs), for failure messages. */
  readonly output: Effect.Effect<string>
  /** SIGKILL (a crash: no clean goodbye to its peers), then waits for the exit. */
  readonly kill: Effect.Effect<void>
}

/**
 * Our environment without any MESH_ setting, so nothing from the shell changes its flags; glibc's malloc set as the
 * image and the NixOS services set it (docs/decisions.md), so that the memory measured is what a deployment sees;
 * then `extra`.
 */
const childEnv = (extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { MALLOC_MMAP_THRESHOLD_: "131072" }
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("MESH_") && key !== "LOG_FORMAT") env[key] = value
  }
  return { ...env, ...extra }
}

export const start = (
  name: "mesh-router" | "mesh-node",
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> = {},
  /** A command the process runs under, e.g. `ip netns exec <ns>` to put it on another (simulated) host. */
  prefix: ReadonlyArray<string> = [],
): Effect.Effect<MemberProcess, never, Scope.Scope> =>
  Effect.gen(function* () {
    const exited = yield* Deferred.make<ProcessExit>()
    let output = ""
    const append = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (output.length > MAX_OUTPUT_CHARS) output = output.slice(-MAX_OUTPUT_CHARS)
    }
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        // MESH_CPU_PROF_DIR (read here, not passed on): each process writes a V8 CPU profile there when it exits.
        const profile = process.env.MESH_CPU_PROF_DIR
        const flags = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]
        const [command = process.execPath, ...rest] = [...prefix, process.execPath, ...flags, ...nodeArgs(name, args)]
        const c = spawn(command, rest, {
          cwd: root,
          env: childEnv(env),
          stdio: ["ignore", "pipe", "pipe"],
        })
        c.stdout?.on("data", append)
        c.stderr?.on("data", append)
        c.on("exit", (code, signal) => Deferred.unsafeDone(exited, Effect.succeed({ code, signal })))
        c.on("error", (error) => {
          append(Buffer.from(`spawn failed: ${error.message}\n`))
          Deferred.unsafeDone(exited, Effect.succeed({ code: null, signal: null }))
        })
        return c
      }),
      (c) =>
        Effect.gen(function* () {
          if (yield* Deferred.isDone(exited)) return
          c.kill("SIGTERM")
          const done = yield* Deferred.await(exited).pipe(Effect.timeout(STOP_TIMEOUT), Effect.option)
          if (Option.isNone(done)) {
            c.kill("SIGKILL")
            yield* Deferred.await(exited)
          }
        }),
    )
    return {
      pid: child.pid ?? -1,
      running: Effect.map(Deferred.isDone(exited), (done) => !done),
      output: Effect.sync(() => output),
      kill: Effect.suspend(() => {
        child.kill("SIGKILL")
        return Deferred.await(exited)
      }),
    }
  })

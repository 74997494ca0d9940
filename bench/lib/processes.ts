/** Starts servers under test as child processes, so the load generator does not share their event loop. */
import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"

export const root = join(import.meta.dirname, "..", "..")

export interface Child {
  readonly process: ChildProcess
  readonly stop: () => Promise<void>
}

/** Spawns `node --import tsx <script> ...args` and resolves once `url` answers. */
export const start = async (
  script: string,
  args: ReadonlyArray<string>,
  readyUrl: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Child> => {
  // BENCH_PROFILE_DIR=<dir> writes a CPU profile of each server, to find where a request's time goes.
  const profile = process.env.BENCH_PROFILE_DIR
  const execArgv = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]
  const child = spawn(process.execPath, [...execArgv, "--import", "tsx", join(root, script), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  })
  let stderr = ""
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString()
  })
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited: ${stderr}`)
    try {
      const res = await fetch(readyUrl)
      if (res.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${script} did not become ready: ${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    process: child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      }),
  }
}

export { freePort } from "../../src/testing/Ports.js"

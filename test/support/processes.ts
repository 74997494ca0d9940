/**
 * Runs the mesh programs as child processes, as an operator does: the built programs (`npm run build`, which the test
 * run does first, support/buildPrograms.ts), or with MESH_RUN_SOURCE=1 their TypeScript entry points through tsx.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"

const root = join(import.meta.dirname, "..", "..")

export const binPath = (name: string): string => join(root, "src", "bin", `${name}.ts`)

/** The built program (`npm run build`): the bundle that ships for the members, the compiler's output for the rest. */
export const builtPath = (name: string): string => join(root, "dist", "bin", `${name}.js`)

/** The arguments that run a program from its sources through tsx, as a developer may (`npx tsx src/bin/...`). */
export const sourceArgs = (name: string, args: ReadonlyArray<string>): Array<string> => [
  "--import",
  "tsx",
  binPath(name),
  ...args,
]

/** Node arguments that run a program: the built one, or with MESH_RUN_SOURCE=1 its sources through tsx. */
export const nodeArgs = (name: string, args: ReadonlyArray<string>): Array<string> =>
  process.env.MESH_RUN_SOURCE === "1" ? sourceArgs(name, args) : [builtPath(name), ...args]

export interface Completed {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a program to its end, without blocking the test's event loop: a worker blocked in a synchronous spawn cannot
 * answer vitest, whose reports then time out on a loaded machine, nor serve the servers a test runs in its process.
 */
export const runBin = (
  name: string,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = {},
  input?: string,
): Promise<Completed> =>
  new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      nodeArgs(name, args),
      { cwd: root, env: { ...process.env, ...env }, encoding: "utf8", timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({ status: code, stdout, stderr })
      },
    )
    child.stdin?.end(input)
  })

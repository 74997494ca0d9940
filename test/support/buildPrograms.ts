/**
 * Builds what `npm run build` builds before any test starts: the compiler's output, the operator console and the
 * bundled members. Tests that start a program start the built one (support/processes.ts), as an operator would, not
 * the sources through tsx, which compiles them at every start (seconds a process on a loaded machine).
 *
 * The build is skipped when it is newer than every input, so running one test file again costs nothing; CI's clean
 * clone always builds.
 */
import { execFile } from "node:child_process"
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { build as buildConsole } from "../../console/build.js"
import { bundle } from "../../scripts/bundle.js"

const root = join(import.meta.dirname, "..", "..")
const STAMP = join(root, "dist", ".built-for-tests")
const INPUTS = ["src", "console", "scripts/bundle.ts", "tsconfig.json", "tsconfig.build.json", "package-lock.json"]

/** The newest modification time under `path`, in ms. */
const newest = (path: string): number => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs)
}

const upToDate = (): boolean =>
  existsSync(STAMP) && INPUTS.every((input) => newest(join(root, input)) < statSync(STAMP).mtimeMs)

export default async function setup(): Promise<void> {
  if (upToDate()) {
    process.stdout.write("The programs in dist/ are newer than their sources: not rebuilt.\n")
    return
  }
  const started = performance.now()
  await promisify(execFile)(
    process.execPath,
    [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
    },
  ).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`the build for the tests failed:\n${error.stdout ?? ""}${error.stderr ?? ""}`)
  })
  await buildConsole()
  await bundle()
  writeFileSync(STAMP, "")
  process.stdout.write(
    `The programs were built into dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s.\n`,
  )
}

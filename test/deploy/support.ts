/**
 * Helpers for the deployment tests: the flags each program's --help lists, the container entry point run against a
 * folder of programs (stubs that report how they were called, or shims that run the built ones), and the
 * container health check.
 */
import { type ChildProcess, type ExecFileOptions, execFile, spawn } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { builtPath, runBin } from "../support/processes.js"

export const root = join(import.meta.dirname, "..", "..")
export const entrypoint = join(root, "deploy", "container", "entrypoint.sh")
export const healthcheckScript = join(root, "deploy", "container", "healthcheck.mjs")

export const PROGRAMS = ["mesh-control-plane", "mesh-router", "mesh-node", "mesh-one"] as const

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes in --help output
const ANSI = /\u001b\[[0-9;]*m/g

const helpCache = new Map<string, ReadonlySet<string>>()

/** The flags a command's --help lists (its option headings, `--name`), read once per command. */
export const helpFlags = async (
  program: string,
  subcommand: ReadonlyArray<string> = [],
): Promise<ReadonlySet<string>> => {
  const key = [program, ...subcommand].join(" ")
  const cached = helpCache.get(key)
  if (cached !== undefined) return cached
  const result = await runBin(program, [...subcommand, "--help"])
  if (result.status !== 0) throw new Error(`${key} --help exited ${result.status}: ${result.stderr}`)
  const flags = new Set<string>()
  for (const line of result.stdout.replace(ANSI, "").split("\n")) {
    const heading = /^(--[a-z0-9-]+)/.exec(line)
    if (heading?.[1] !== undefined) flags.add(heading[1])
  }
  if (flags.size === 0) throw new Error(`${key} --help listed no flags`)
  helpCache.set(key, flags)
  return flags
}

/** The programs as stubs: each prints how it was called as JSON, and exits with STUB_EXIT (0 by default). */
export const stubBinDir = (dir: string): string => {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "package.json"), '{"type":"module"}\n')
  for (const program of PROGRAMS) {
    writeFileSync(
      join(dir, `${program}.js`),
      `process.stdout.write(JSON.stringify({ program: ${JSON.stringify(program)}, argv: process.argv.slice(2), ` +
        "metricsAddr: process.env.MESH_METRICS_ADDR ?? null }))\n" +
        'process.exit(Number(process.env.STUB_EXIT ?? "0"))\n',
    )
  }
  return dir
}

/** The programs as shims that run the built ones (the test run builds them first, support/buildPrograms.ts). */
export const shimBinDir = (dir: string): string => {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "package.json"), '{"type":"module"}\n')
  for (const program of PROGRAMS) {
    writeFileSync(
      join(dir, `${program}.js`),
      `await import(${JSON.stringify(pathToFileURL(builtPath(program)).href)})\n`,
    )
  }
  return dir
}

/** The entry point's environment: `node` on PATH is the Node running the tests, as in the image. */
const entrypointEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(base)) if (name.startsWith("MESH_")) delete base[name]
  return { ...base, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`, ...env }
}

export interface Ran {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to its end without blocking the worker (a blocked worker cannot answer vitest's runner). */
const ran = (command: string, args: ReadonlyArray<string>, options: ExecFileOptions): Promise<Ran> =>
  new Promise((resolve) => {
    execFile(command, args, { ...options, encoding: "utf8" }, (error, stdout, stderr) => {
      const status = error === null ? 0 : typeof error.code === "number" ? error.code : null
      resolve({ status, stdout, stderr })
    })
  })

export const runEntrypoint = (
  args: ReadonlyArray<string>,
  options: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<Ran> =>
  ran("sh", [entrypoint, ...args], { cwd: options.cwd, env: entrypointEnv(options.env), timeout: 120_000 })

export const startEntrypoint = (
  args: ReadonlyArray<string>,
  options: { env: NodeJS.ProcessEnv; cwd: string },
): ChildProcess =>
  spawn("sh", [entrypoint, ...args], {
    cwd: options.cwd,
    env: entrypointEnv(options.env),
    stdio: ["ignore", "ignore", "pipe"],
  })

/** Runs the container health check against the target in `healthFile`. */
export const healthcheck = (healthFile: string): Promise<Ran> =>
  ran(process.execPath, [healthcheckScript], {
    env: { ...process.env, MESH_HEALTH_FILE: healthFile },
    timeout: 30_000,
  })

/** Retries until `attempt` gives a value, 60 s at most. */
export const poll = async <A>(what: string, attempt: () => Promise<A | undefined> | A | undefined): Promise<A> => {
  for (let i = 0; i < 600; i++) {
    const value = await Promise.resolve()
      .then(attempt)
      .catch(() => undefined)
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

export const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/**
 * The files and folders `npm run build` reads, from package.json's build script: the manifest and lockfile, each
 * `tsc -p` config with the config it extends and the folders it includes, and the folder of each script `tsx` runs
 * (with everything that script imports from there). Both the image's build context and the Nix source set must hold
 * each of them.
 */
export const buildReads = (): ReadonlyArray<string> => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { build: string } }
  const reads = new Set(["package.json", "package-lock.json"])
  // A config's `include` replaces the one it extends, so only the nearest one counts.
  const tsconfig = (file: string, included: boolean) => {
    reads.add(file)
    const config = JSON.parse(readFileSync(join(root, file), "utf8")) as { extends?: string; include?: string[] }
    if (!included) for (const folder of config.include ?? []) reads.add(folder)
    if (config.extends !== undefined) {
      tsconfig(config.extends.replace(/^\.\//, ""), included || config.include !== undefined)
    }
  }
  for (const m of pkg.scripts.build.matchAll(/\btsc -p (\S+)/g)) tsconfig(m[1] as string, false)
  for (const m of pkg.scripts.build.matchAll(/\btsx (\S+)/g)) reads.add(dirname(m[1] as string))
  return [...reads].sort()
}

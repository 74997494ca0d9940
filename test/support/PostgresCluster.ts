/**
 * A throwaway PostgreSQL server of our own (initdb into a temporary folder, on a free port), for tests that stop and
 * start the database under a running control plane without disturbing the shared server other suites use.
 */
import { execFileSync } from "node:child_process"
import { chownSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, type Scope } from "effect"
import { freePort } from "../../src/testing/Ports.js"

export interface PostgresCluster {
  readonly url: string
  readonly stop: Effect.Effect<void>
  readonly start: Effect.Effect<void>
}

const binDir = (): string => {
  const versions = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a))
  if (versions[0] === undefined) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql")
  return join("/usr/lib/postgresql", versions[0], "bin")
}

/** Runs a server binary as the `postgres` user when we are root (postgres refuses to run as root). */
const run = (bin: string, args: ReadonlyArray<string>) => {
  const asRoot = process.getuid?.() === 0
  const [command, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, [...args]]
  execFileSync(command, argv, { stdio: "pipe" })
}

export const make: Effect.Effect<PostgresCluster, never, Scope.Scope> = Effect.gen(function* () {
  const bin = binDir()
  const port = yield* Effect.promise(freePort)
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const d = mkdtempSync(join(tmpdir(), "mesh-pg-"))
      if (process.getuid?.() === 0) {
        const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim())
        const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim())
        chownSync(d, uid, gid)
      }
      return d
    }),
    (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })),
  )
  const data = join(dir, "data")
  run(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
  const start = Effect.sync(() =>
    run(join(bin, "pg_ctl"), ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "start"]),
  )
  const stop = Effect.sync(() => run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"]))
  yield* Effect.acquireRelease(start, () => Effect.ignore(stop))
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, start, stop }
})

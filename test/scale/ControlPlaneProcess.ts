/**
 * `mesh-control-plane` as a child process, run from source the way an operator runs the built binary: on loopback,
 * over the given database, with the given flags and environment. Nothing is shared with the test but the database
 * and the network, so several of them on one database behave like replicas on separate machines.
 *
 * `start` waits until the process listens and answers 200 on /readyz; `stop` sends SIGTERM, `kill` SIGKILL, and the
 * scope kills whatever is still running when it closes.
 */
import { spawn } from "node:child_process"
import { join } from "node:path"
import { Deferred, Duration, Effect, Option, Redacted, type Scope } from "effect"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import { nodeArgs } from "../support/processes.js"

const root = join(import.meta.dirname, "..", "..")

/** Never contacted: these tests enroll with bootstrap tokens only. */
export const ISSUER = "http://127.0.0.1:1/unused-issuer"
export const ADMIN_TOKEN = "scale-test-admin-token"

/** How long a start may take: CI machines run several test files at once (and MESH_RUN_SOURCE=1 adds tsx). */
const START_TIMEOUT = Duration.seconds(60)
/** How long SIGTERM may take before the process is killed (and the test that asked for a clean stop fails). */
const STOP_TIMEOUT = Duration.seconds(15)
/** Output kept for failure messages. */
const MAX_OUTPUT_CHARS = 200_000

export interface ProcessExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Options {
  readonly database: DatabaseConfig
  /** Flags after the defaults (issuer, bind address, database, log level); a later flag wins. */
  readonly flags?: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  /** The port to listen on, to restart on the address clients already use; default: one the OS picks. */
  readonly port?: number
  /** false: no `--db-dsn` flag, so the DSN comes from MESH_DB_DSN or `--db-dsn-path` as an operator gives it. */
  readonly dsnFlag?: boolean
  /** The address to listen on and be reached at; default 127.0.0.1. */
  readonly host?: string
  /** A command the process runs under, e.g. `ip netns exec <ns>` to put it on another (simulated) host. */
  readonly prefix?: ReadonlyArray<string>
}

export interface ControlPlaneProcess {
  /** `http://<host>:<port>` */
  readonly url: string
  readonly port: number
  readonly pid: number
  readonly adminToken: string
  /** Whether the process has not exited yet. */
  readonly running: Effect.Effect<boolean>
  /** What the process wrote on stdout and stderr so far (its logs), for failure messages. */
  readonly output: Effect.Effect<string>
  /** SIGTERM, then waits for the exit; SIGKILL if it has not exited within 15 seconds. */
  readonly stop: Effect.Effect<ProcessExit & { readonly timedOut: boolean }>
  /** SIGKILL (`kill -9`), then waits for the exit. */
  readonly kill: Effect.Effect<ProcessExit>
  /** Waits for the exit, sending nothing. */
  readonly exited: Effect.Effect<ProcessExit>
}

/** The environment of the child: ours without any MESH_ setting, so nothing from the shell changes its flags. */
const childEnv = (extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("MESH_") && key !== "LOG_FORMAT") env[key] = value
  }
  return {
    ...env,
    MESH_ADMIN_TOKEN: ADMIN_TOKEN,
    // These tests send hundreds of enrollments from one address on purpose: without this, the per-client limit of
    // --enroll-rate-limit (10 per second, bursts of 20) would answer most of them 429. A flag in `flags` still wins.
    MESH_ENROLL_RATE_LIMIT: "0",
    ...extra,
  }
}

const LISTENING = /Listening on http:\/\/[0-9.]+:(\d+)/

const readyz = (url: string) =>
  Effect.promise(() =>
    fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status,
      () => 0,
    ),
  )

/** Starts a control plane and waits until it is ready; the scope stops it (SIGTERM, then SIGKILL) if still running. */
export const start = (options: Options): Effect.Effect<ControlPlaneProcess, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const args = [
      "--issuer",
      ISSUER,
      "--bind-address",
      `${options.host ?? "127.0.0.1"}:${options.port ?? 0}`,
      "--db-driver",
      options.database.driver,
      ...(options.dsnFlag === false ? [] : ["--db-dsn", Redacted.value(options.database.dsn)]),
      "--log-level",
      "info",
      ...(options.flags ?? []),
    ]
    const exited = yield* Deferred.make<ProcessExit>()
    let output = ""
    const append = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (output.length > MAX_OUTPUT_CHARS) output = output.slice(-MAX_OUTPUT_CHARS)
    }

    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const [command = process.execPath, ...rest] = [
          ...(options.prefix ?? []),
          process.execPath,
          ...nodeArgs("mesh-control-plane", args),
        ]
        const c = spawn(command, rest, {
          cwd: root,
          env: childEnv(options.env ?? {}),
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
      (c) => terminate(c, exited),
    )

    const running = Effect.map(Deferred.isDone(exited), (done) => !done)
    const describe = (what: string) => `${what}\n--- control plane output ---\n${output.slice(-8_000)}`

    // The port the process bound, from its "Listening on" line (port 0 lets the OS pick a free one, race-free).
    const port = yield* Effect.gen(function* () {
      const deadline = Date.now() + Duration.toMillis(START_TIMEOUT)
      while (Date.now() < deadline) {
        const match = LISTENING.exec(output)
        if (match?.[1] !== undefined) return Number(match[1])
        if (!(yield* running)) return yield* Effect.fail(new Error(describe("control plane exited before listening")))
        yield* Effect.sleep(Duration.millis(50))
      }
      return yield* Effect.fail(new Error(describe("control plane did not listen in time")))
    })
    const url = `http://${options.host ?? "127.0.0.1"}:${port}`

    const deadline = Date.now() + Duration.toMillis(START_TIMEOUT)
    while ((yield* readyz(url)) !== 200) {
      if (!(yield* running)) return yield* Effect.fail(new Error(describe("control plane exited before ready")))
      if (Date.now() > deadline) return yield* Effect.fail(new Error(describe("control plane not ready in time")))
      yield* Effect.sleep(Duration.millis(100))
    }

    const kill = Effect.suspend(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      return Deferred.await(exited)
    })
    const stop = Effect.suspend(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
      return Deferred.await(exited).pipe(
        Effect.timeout(STOP_TIMEOUT),
        Effect.map((exit) => ({ ...exit, timedOut: false })),
        Effect.catchTag("TimeoutException", () => Effect.map(kill, (exit) => ({ ...exit, timedOut: true }))),
      )
    })
    const pid = child.pid ?? -1
    return {
      url,
      port,
      pid,
      adminToken: ADMIN_TOKEN,
      running,
      output: Effect.sync(() => output),
      stop,
      kill,
      exited: Deferred.await(exited),
    } satisfies ControlPlaneProcess
  })

/** The scope's end: a clean stop when possible (closes database sessions), SIGKILL otherwise. */
const terminate = (child: ReturnType<typeof spawn>, exited: Deferred.Deferred<ProcessExit>) =>
  Effect.gen(function* () {
    if (yield* Deferred.isDone(exited)) return
    child.kill("SIGTERM")
    const done = yield* Deferred.await(exited).pipe(Effect.timeout(STOP_TIMEOUT), Effect.option)
    if (Option.isNone(done)) {
      child.kill("SIGKILL")
      yield* Deferred.await(exited)
    }
  })

/** Starts several control planes at once (replicas starting together), each with its own options. */
export const startAll = (all: ReadonlyArray<Options>) => Effect.all(all.map(start), { concurrency: "unbounded" })

import { execFile } from "node:child_process"
import { statSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { promisify } from "node:util"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import * as SqlLive from "../../../src/layers/sql/SqlLive.js"
import * as TestDatabase from "../../../src/testing/TestDatabase.js"
import { Sqlite } from "../../scale/Database.js"

const root = join(import.meta.dirname, "..", "..", "..")

/** The control plane's SqlClient on a fresh sqlite file, open until the test's scope closes. */
const sqliteClient = Effect.gen(function* () {
  const database = yield* TestDatabase.sqliteFile
  const context = yield* Layer.build(SqlLive.layer(database))
  return { file: Redacted.value(database.dsn), sql: Context.get(context, SqlClient.SqlClient) }
})

describe("the sqlite client [sqlite]", () => {
  it.scoped("keeps the database in WAL mode, in files only their owner can read", () =>
    Effect.gen(function* () {
      const { file, sql } = yield* sqliteClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY)`
      yield* sql`INSERT INTO t (id) VALUES (1)`
      const [mode] = yield* sql<{ readonly journal_mode: string }>`PRAGMA journal_mode`
      expect(mode?.journal_mode).toBe("wal")
      // The database holds signing keys; sqlite gives the WAL and shared-memory files the database file's mode.
      const modes = Object.fromEntries(
        [file, `${file}-wal`, `${file}-shm`].map((name) => [basename(name), statSync(name).mode & 0o777]),
      )
      expect(modes).toEqual({ "control-plane.db": 0o600, "control-plane.db-wal": 0o600, "control-plane.db-shm": 0o600 })
    }),
  )

  it.scopedLive("a write that meets another connection's lock waits for it instead of failing", () =>
    Effect.gen(function* () {
      const { file, sql } = yield* sqliteClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY)`
      const other = new Sqlite(file, { fileMustExist: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      other.exec("BEGIN EXCLUSIVE")
      // The other connection lets go well within the client's five-second wait.
      yield* Effect.forkScoped(Effect.delay(Duration.millis(300))(Effect.sync(() => other.exec("COMMIT"))))
      yield* sql`INSERT INTO t (id) VALUES (1)`
      expect(yield* sql`SELECT id FROM t`).toEqual([{ id: 1 }])
    }),
  )

  // better-sqlite3 12 on Node 24 aborted the whole process (`Assertion failed: (env) != nullptr`) when the garbage
  // collector finalized a prepared statement. The child process runs many statements through the client with the
  // heap under pressure; a finalizer that misbehaves kills it, and the test shows its stderr.
  it.live("survives many prepared statements finalized under GC pressure", () =>
    Effect.gen(function* () {
      const dir = yield* TestDatabase.sqliteFile.pipe(Effect.map((d) => dirname(Redacted.value(d.dsn))))
      const child = yield* Effect.promise(() =>
        promisify(execFile)(
          process.execPath,
          ["--expose-gc", "--import", "tsx", join("test", "support", "sqliteGcPressure.ts"), join(dir, "gc.db")],
          { cwd: root, timeout: 120_000 },
        ).then(
          (out) => ({ code: 0, signal: null, stdout: out.stdout, stderr: out.stderr }),
          (error: { code?: number; signal?: string | null; stdout?: string; stderr?: string }) => ({
            code: error.code ?? -1,
            signal: error.signal ?? null,
            stdout: error.stdout ?? "",
            stderr: error.stderr ?? "",
          }),
        ),
      )
      expect({ code: child.code, signal: child.signal }, child.stderr).toEqual({ code: 0, signal: null })
      expect(child.stdout).toMatch(/^ok 3200 queries, \d+ objects churned, \d+ forced collections on Node v/)
    }).pipe(Effect.scoped),
  )
})

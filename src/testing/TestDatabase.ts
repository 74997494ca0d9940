/**
 * Fresh, isolated databases for tests: sqlite in memory or in a temporary file, or a new schema on a postgres server
 * that is dropped when the scope closes. Each call gives a database nobody else uses, so suites never see each
 * other's rows even when they run in parallel against one server.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted, type Scope } from "effect"
import pg from "pg"
import type { DatabaseConfig } from "../config/DatabaseConfig.js"

export type Driver = "sqlite" | "postgres"

export const sqliteMemory: DatabaseConfig = { driver: "sqlite", dsn: Redacted.make(":memory:") }

/** A sqlite file in a new temporary folder, for tests where two processes or two clients share one database. */
export const sqliteFile: Effect.Effect<DatabaseConfig, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-test-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
).pipe(Effect.map((dir) => ({ driver: "sqlite", dsn: Redacted.make(join(dir, "control-plane.db")) })))

const withSearchPath = (baseUrl: string, schema: string): string => {
  const url = new URL(baseUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return url.toString()
}

const adminQuery = (baseUrl: string, text: string) =>
  Effect.tryPromise({
    try: async () => {
      const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 5_000 })
      await client.connect()
      try {
        await client.query(text)
      } finally {
        await client.end()
      }
    },
    catch: (cause) => new Error(`postgres at MESH_TEST_PG_URL is not usable: ${(cause as Error).message}`),
  })

/** A new schema on the server at `baseUrl`, dropped with everything in it when the scope closes. */
export const postgresSchema = (baseUrl: string): Effect.Effect<DatabaseConfig, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const schema = `mesh_test_${randomBytes(6).toString("hex")}`
      return Effect.as(adminQuery(baseUrl, `CREATE SCHEMA ${schema}`), schema)
    }),
    (schema) => Effect.ignore(adminQuery(baseUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)),
  ).pipe(Effect.map((schema) => ({ driver: "postgres", dsn: Redacted.make(withSearchPath(baseUrl, schema)) })))

/** A fresh database of the given driver. */
export const fresh = (
  driver: Driver,
  postgresUrl: string | undefined,
): Effect.Effect<DatabaseConfig, Error, Scope.Scope> =>
  driver === "sqlite"
    ? Effect.succeed(sqliteMemory)
    : postgresUrl === undefined
      ? Effect.fail(new Error("MESH_TEST_PG_URL is not set"))
      : postgresSchema(postgresUrl)

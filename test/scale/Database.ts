/**
 * Reads a control plane's database from the test, behind its back: `pg` for postgres (the DSN's search_path picks
 * the test's schema), better-sqlite3 read-only for a sqlite file. Assertions on what was stored are made here, not
 * only on what the HTTP API answered. Queries use `?` placeholders on both drivers.
 */
import { createRequire } from "node:module"
import { Effect, Redacted } from "effect"
import pg from "pg"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"

/** The part of better-sqlite3 these tests use (the package ships no types and @types is not installed). */
export interface SqliteStatement {
  readonly all: (...params: ReadonlyArray<unknown>) => Array<Record<string, unknown>>
}
export interface SqliteDatabase {
  readonly prepare: (sql: string) => SqliteStatement
  readonly exec: (sql: string) => unknown
  readonly close: () => unknown
}
type SqliteConstructor = new (
  filename: string,
  options?: { readonly readonly?: boolean; readonly fileMustExist?: boolean; readonly timeout?: number },
) => SqliteDatabase

const require = createRequire(import.meta.url)
/** better-sqlite3, the driver the control plane itself uses for sqlite. */
export const Sqlite = require("better-sqlite3") as SqliteConstructor

export type Row = Readonly<Record<string, unknown>>

const toPg = (text: string): string => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

/** Runs one read-only query on its own connection (the database may have been restarted since the last one). */
export const query = (
  database: DatabaseConfig,
  text: string,
  params: ReadonlyArray<unknown> = [],
): Effect.Effect<ReadonlyArray<Row>, Error> =>
  database.driver === "postgres"
    ? Effect.tryPromise({
        try: async () => {
          const client = new pg.Client({
            connectionString: Redacted.value(database.dsn),
            connectionTimeoutMillis: 5_000,
          })
          await client.connect()
          try {
            return (await client.query(toPg(text), [...params])).rows as ReadonlyArray<Row>
          } finally {
            await client.end()
          }
        },
        catch: (cause) => new Error(`postgres query failed: ${(cause as Error).message}`),
      })
    : Effect.try({
        try: () => {
          const db = new Sqlite(Redacted.value(database.dsn), { readonly: true, fileMustExist: true })
          try {
            return db.prepare(text).all(...params) as ReadonlyArray<Row>
          } finally {
            db.close()
          }
        },
        catch: (cause) => new Error(`sqlite query failed: ${(cause as Error).message}`),
      })

/** A query whose single row holds numbers (counts), read as numbers on both drivers (postgres counts are text). */
export const numbers = <K extends string>(
  database: DatabaseConfig,
  text: string,
  params: ReadonlyArray<unknown> = [],
): Effect.Effect<Record<K, number>, Error> =>
  Effect.flatMap(query(database, text, params), (rows) => {
    const row = rows[0]
    if (row === undefined) return Effect.fail(new Error(`no row from: ${text}`))
    return Effect.succeed(
      Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v === null ? Number.NaN : Number(v)])) as Record<
        K,
        number
      >,
    )
  })

/** A column of strings. */
export const strings = (database: DatabaseConfig, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.map(query(database, text, params), (rows) => rows.map((row) => String(Object.values(row)[0])))

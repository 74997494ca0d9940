import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Migrations from "../../../src/layers/sql/Migrations.js"
import { migrations } from "../../../src/layers/sql/migrations/index.js"
import * as SqlLive from "../../../src/layers/sql/SqlLive.js"
import { describeDatabases } from "../../support/databases.js"

const applied = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ migration_id: number }>`SELECT migration_id FROM ${sql(Migrations.MIGRATIONS_TABLE)} ORDER BY migration_id`,
)

describeDatabases("Migrations", (db) => {
  it.scoped("apply every migration once and are a no-op the second time", () =>
    Effect.gen(function* () {
      // A database two clients share: sqlite in memory would be a new database per client.
      const config = yield* db.freshShared
      const first = yield* Migrations.run.pipe(Effect.provide(SqlLive.layer(config)))
      expect(first.length).toBe(Object.keys(migrations).length)
      const [second, rows] = yield* Effect.all([Migrations.run, applied]).pipe(Effect.provide(SqlLive.layer(config)))
      expect(second).toEqual([])
      expect(rows.map((r) => r.migration_id)).toEqual(Object.keys(migrations).map((k) => Number(k.slice(0, 4))))
    }),
  )

  it.scoped("concurrent migrators on one database apply each migration exactly once", () =>
    Effect.gen(function* () {
      const config = yield* db.freshShared
      // Separate clients, as separate processes would have: each has its own pool or sqlite connection.
      const results = yield* Effect.all(
        Array.from({ length: 4 }, () => Migrations.run.pipe(Effect.provide(SqlLive.layer(config)))),
        { concurrency: "unbounded" },
      )
      const total = results.reduce((n, r) => n + r.length, 0)
      expect(total).toBe(Object.keys(migrations).length)
      const rows = yield* applied.pipe(Effect.provide(SqlLive.layer(config)))
      expect(rows.length).toBe(Object.keys(migrations).length)
    }),
  )
})

describeDatabases("SqlLive", (db) => {
  it.scoped("round-trips the column types the repositories use", () =>
    Effect.gen(function* () {
      const config = yield* db.fresh
      yield* roundTrip.pipe(Effect.provide(SqlLive.layer(config)))
    }),
  )
})

const roundTrip = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const blob = sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" })
  yield* sql.unsafe(`CREATE TABLE probe (t BIGINT NOT NULL, b BOOLEAN NOT NULL, k ${blob} NOT NULL)`)
  const t = 1_795_000_000_123
  yield* sql`INSERT INTO probe ${sql.insert({ t, b: 1, k: Buffer.from([1, 2, 3]) })}`
  const [row] = yield* sql<{ t: number; b: unknown; k: Uint8Array }>`SELECT t, b, k FROM probe`
  expect(row?.t).toBe(t)
  expect(Boolean(row?.b)).toBe(true)
  expect([...(row?.k ?? [])]).toEqual([1, 2, 3])
})

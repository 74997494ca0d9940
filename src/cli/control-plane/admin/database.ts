/**
 * The database as the admin commands see it: the same flags as the server, migrated, with the services a command
 * needs and nothing that listens or runs in the background. The commands work on a control plane's existing
 * database only: a sqlite path that does not exist is refused rather than created, and so is a database without the
 * control plane's tables (a wrong path would otherwise be migrated into a new, empty control plane database).
 */
import { existsSync } from "node:fs"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Redacted } from "effect"
import type { DatabaseConfig } from "../../../config/DatabaseConfig.js"
import * as MeshEventsMemory from "../../../layers/events/MeshEventsMemory.js"
import * as BansLive from "../../../layers/nodes/BansLive.js"
import * as AuditLive from "../../../layers/operations/AuditLive.js"
import * as ChangeFeedLive from "../../../layers/operations/ChangeFeedLive.js"
import * as Migrations from "../../../layers/sql/Migrations.js"
import * as SqlLive from "../../../layers/sql/SqlLive.js"
import { UsageError } from "../../run.js"

/** Refuses before anything is opened (opening a sqlite path creates the file). */
const sqliteExists = (database: DatabaseConfig) =>
  Effect.suspend(() => {
    const path = Redacted.value(database.dsn)
    return database.driver === "sqlite" && path !== ":memory:" && !path.startsWith("file:") && !existsSync(path)
      ? Effect.fail(
          new UsageError({
            message: `--db-dsn: ${path} does not exist; give the control plane's database file (admin commands never create one)`,
          }),
        )
      : Effect.void
  })

/** Whether the control plane has ever migrated this database. */
const holdsControlPlane = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.onDialectOrElse({
    pg: () => sql<{ found: unknown }>`SELECT to_regclass(${Migrations.MIGRATIONS_TABLE}) IS NOT NULL AS found`,
    orElse: () =>
      sql<{ found: unknown }>`SELECT COUNT(*) AS found FROM sqlite_master
        WHERE type = 'table' AND name = ${Migrations.MIGRATIONS_TABLE}`,
  })
  const found = rows[0]?.found
  return found === true || Number(found) > 0
})

const existing = (database: DatabaseConfig) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      if (!(yield* Effect.orDie(holdsControlPlane))) {
        return yield* new UsageError({
          message: `--db-dsn: the ${database.driver} database given holds no control plane (no ${Migrations.MIGRATIONS_TABLE} table); give the one the control plane runs on`,
        })
      }
    }),
  )

export const bansLayer = (database: DatabaseConfig) =>
  BansLive.layer.pipe(
    Layer.provide(Layer.mergeAll(AuditLive.layer, MeshEventsMemory.layer, ChangeFeedLive.publisher)),
    Layer.provideMerge(
      Migrations.layer.pipe(
        Layer.provideMerge(existing(database)),
        Layer.provideMerge(SqlLive.layer(database)),
        Layer.provideMerge(Layer.effectDiscard(sqliteExists(database))),
      ),
    ),
  )

/**
 * Runs the one migration set on either dialect with the @effect/sql Migrator.
 *
 * On postgres, several control planes may start at once against one database: a session advisory lock, keyed by the
 * current schema, serializes them so exactly one applies each migration and the others find nothing left to do.
 */

import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { migrations } from "./migrations/index.js"

export const MIGRATIONS_TABLE = "mesh_migrations"

const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE })

const LOCK_KEY = "hashtext('mesh-migrations:' || current_schema())"

/** Applies pending migrations; returns the ids and names of those applied by this call. */
export const run = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.onDialectOrElse({
    pg: () =>
      Effect.scoped(
        Effect.gen(function* () {
          const lockConnection = yield* sql.reserve
          yield* lockConnection.executeRaw(`SELECT pg_advisory_lock(${LOCK_KEY})`, [])
          yield* Effect.addFinalizer(() =>
            lockConnection.executeRaw(`SELECT pg_advisory_unlock(${LOCK_KEY})`, []).pipe(Effect.ignore),
          )
          return yield* migrate
        }),
      ),
    orElse: () => migrate,
  })
}).pipe(
  Effect.tap((applied) =>
    applied.length > 0
      ? Effect.logInfo("database migrated").pipe(
          Effect.annotateLogs("applied", applied.map(([id, name]) => `${id}_${name}`).join(",")),
        )
      : Effect.void,
  ),
  Effect.withSpan("Migrations.run"),
)

/** A layer that migrates the database before anything that depends on its tables starts. */
export const layer: Layer.Layer<
  never,
  Migrator.MigrationError | import("@effect/sql").SqlError.SqlError,
  SqlClient.SqlClient
> = Layer.effectDiscard(run)

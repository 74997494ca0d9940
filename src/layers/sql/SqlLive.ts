/**
 * The one SqlClient of the control plane, chosen by `--db-driver`.
 *
 * sqlite: WAL journal, a bounded non-blocking wait when another process holds the write lock (SqliteClientLive), and
 * a database file created with mode 0600 because it holds signing keys.
 * postgres: a pool whose first connection is retried while the server comes up; int8 columns (our unix-millisecond
 * times and counts) are read as numbers.
 */
import { closeSync, existsSync, openSync } from "node:fs"
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Layer, Redacted, Schedule } from "effect"
import pg from "pg"
import type { DatabaseConfig } from "../../config/DatabaseConfig.js"
import * as SqliteClientLive from "./SqliteClientLive.js"

const INT8_OID = 20

const pgTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

const createPrivateFile = (filename: string): void => {
  if (filename === ":memory:" || filename.startsWith("file:") || existsSync(filename)) return
  closeSync(openSync(filename, "a", 0o600))
}

const sqlite = (filename: string): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      createPrivateFile(filename)
      return SqliteClientLive.layer(filename)
    }),
  )

/** Connection attempts at start: about 30 seconds in all, as the reference system does, then the start fails. */
const connectRetry = Schedule.exponential(Duration.millis(250), 1.5).pipe(
  Schedule.either(Schedule.spaced(Duration.seconds(2))),
  Schedule.upTo(Duration.seconds(30)),
)

const postgres = (url: Redacted.Redacted<string>): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  PgClient.layer({
    url,
    types: pgTypes,
    connectTimeout: Duration.seconds(5),
    maxConnections: 10,
    idleTimeout: Duration.seconds(30),
    applicationName: "mesh-control-plane",
  }).pipe(
    Layer.tapErrorCause((cause) => Effect.logWarning("postgres not reachable yet; retrying", cause)),
    Layer.retry(connectRetry),
  )

export const layer = (config: DatabaseConfig): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  config.driver === "sqlite" ? sqlite(Redacted.value(config.dsn)) : postgres(config.dsn)

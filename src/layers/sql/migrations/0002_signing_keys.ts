/**
 * Signing keys of the control plane and the row that elects one replica per rotation.
 * A key with `expires_at` NULL is the current one; a rotated-out key keeps its grace deadline in `expires_at`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE TABLE signing_keys (
      id SERIAL PRIMARY KEY,
      private_key BYTEA NOT NULL,
      public_key BYTEA NOT NULL UNIQUE,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NULL
    )`,
    orElse: () => sql`CREATE TABLE signing_keys (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      private_key BLOB NOT NULL,
      public_key BLOB NOT NULL UNIQUE,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NULL
    )`,
  })
  yield* sql`CREATE TABLE key_rotation (
    id INTEGER PRIMARY KEY,
    next_rotation_at BIGINT NOT NULL
  )`
})

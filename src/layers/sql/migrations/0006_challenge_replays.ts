/** Challenges already used for enrollment, so a captured request cannot be replayed within its window. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const blob = sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" })
  yield* sql.unsafe(`CREATE TABLE challenge_replays (
    digest ${blob} PRIMARY KEY,
    expires_at BIGINT NOT NULL
  )`)
  yield* sql`CREATE INDEX challenge_replays_expires_at ON challenge_replays (expires_at)`
})

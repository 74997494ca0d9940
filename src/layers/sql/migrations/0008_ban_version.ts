/**
 * A node's ban version: raised by every ban and unban, and carried as the sequence of the mesh event announcing it,
 * so receivers can tell a newer ban state from a replayed older one.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE nodes ADD COLUMN ban_version BIGINT NOT NULL DEFAULT 0`
})

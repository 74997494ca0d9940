/** Facts about this control-plane installation, such as its id, shared by every replica on one database. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE control_plane_meta (
    key VARCHAR(64) PRIMARY KEY,
    value TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`
})

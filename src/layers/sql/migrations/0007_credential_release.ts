/**
 * When the credential of an approved enrollment request was handed to the enrollee (`GET /enroll/status`, or the
 * auto-approved `POST /enroll` answer): it is released once. Requests approved before this migration count as
 * released: their enrollees collected on every poll until now, and one that has not can enroll again with its token.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE enrollment_requests ADD COLUMN released_at BIGINT NULL`
  yield* sql`UPDATE enrollment_requests SET released_at = resolved_at WHERE status = 'approved'`
})

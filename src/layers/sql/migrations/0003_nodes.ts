/**
 * Enrolled nodes (and routers). `credential_digest` is the SHA-256 of the last credential issued: a refresh with any
 * other credential is a replay. `identity_key` (`<issuer>|<subject>`) ties OIDC enrollments to their identity for bans.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const blob = sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" })
  yield* sql.unsafe(`CREATE TABLE nodes (
    peer_id VARCHAR(128) PRIMARY KEY,
    public_key ${blob} NOT NULL,
    role VARCHAR(255) NOT NULL,
    labels_json TEXT NOT NULL,
    enrollment_type VARCHAR(16) NOT NULL,
    identity_json TEXT NULL,
    identity_key VARCHAR(1024) NULL,
    owner_id VARCHAR(1024) NULL,
    autonomous_recovery BOOLEAN NOT NULL DEFAULT FALSE,
    credential_digest ${blob} NOT NULL,
    credential_expires_at BIGINT NOT NULL,
    session_expires_at BIGINT NULL,
    enrolled_at BIGINT NOT NULL,
    refreshed_at BIGINT NULL,
    banned BOOLEAN NOT NULL DEFAULT FALSE,
    banned_at BIGINT NULL
  )`)
  yield* sql`CREATE INDEX nodes_identity_key ON nodes (identity_key)`
  yield* sql`CREATE INDEX nodes_session_expires_at ON nodes (session_expires_at)`
})

/**
 * Enrollment: the mesh policy (one document, replaced as a whole), bootstrap tokens (stored as SHA-256 hashes), the
 * queue of enrollment requests, the users seen through OIDC, and banned identities.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const blob = sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" })
  yield* sql`CREATE TABLE policy (
    id INTEGER PRIMARY KEY,
    document TEXT NOT NULL,
    version BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql.unsafe(`CREATE TABLE bootstrap_tokens (
    id VARCHAR(64) PRIMARY KEY,
    token_hash ${blob} NOT NULL UNIQUE,
    role VARCHAR(255) NOT NULL,
    max_usages INTEGER NOT NULL,
    usages_count INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL,
    autonomous_recovery BOOLEAN NOT NULL DEFAULT FALSE,
    owner_id VARCHAR(1024) NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NULL,
    last_used_at BIGINT NULL
  )`)
  yield* sql`CREATE INDEX bootstrap_tokens_owner ON bootstrap_tokens (owner_id)`
  yield* sql.unsafe(`CREATE TABLE enrollment_requests (
    id VARCHAR(64) PRIMARY KEY,
    peer_id VARCHAR(128) NOT NULL UNIQUE,
    public_key ${blob} NOT NULL,
    requested_role VARCHAR(255) NOT NULL,
    labels_json TEXT NOT NULL,
    token_id VARCHAR(64) NOT NULL,
    status VARCHAR(16) NOT NULL,
    created_at BIGINT NOT NULL,
    resolved_at BIGINT NULL,
    resolved_by VARCHAR(255) NULL
  )`)
  yield* sql`CREATE INDEX enrollment_requests_status ON enrollment_requests (status)`
  yield* sql`CREATE TABLE users (
    id VARCHAR(1024) PRIMARY KEY,
    issuer VARCHAR(1024) NOT NULL,
    subject VARCHAR(1024) NOT NULL,
    email VARCHAR(1024) NULL,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE banned_identities (
    identity_key VARCHAR(1024) PRIMARY KEY,
    banned_at BIGINT NOT NULL
  )`
})

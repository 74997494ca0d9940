/**
 * Tool drift reports: a changed tool definition a node saw, kept for the operator's decision. One row per (provider,
 * tool, new fingerprint); definitions are canonical JSON, capped at 64 KiB each by the route.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const id = sql.onDialectOrElse({
    pg: () => "BIGSERIAL PRIMARY KEY",
    orElse: () => "INTEGER PRIMARY KEY AUTOINCREMENT",
  })
  yield* sql.unsafe(`CREATE TABLE tool_drift_reports (
    id ${id},
    reporter_peer_id VARCHAR(128) NOT NULL,
    provider_peer_id VARCHAR(128) NOT NULL,
    provider_labels_json TEXT NOT NULL,
    tool VARCHAR(400) NOT NULL,
    against VARCHAR(16) NOT NULL,
    old_fingerprint VARCHAR(80) NOT NULL,
    old_definition TEXT,
    new_fingerprint VARCHAR(80) NOT NULL,
    new_definition TEXT,
    status VARCHAR(16) NOT NULL,
    reports INTEGER NOT NULL,
    first_reported_at BIGINT NOT NULL,
    last_reported_at BIGINT NOT NULL,
    resolved_at BIGINT,
    resolved_by VARCHAR(1024),
    approved_for_json TEXT,
    UNIQUE (provider_peer_id, tool, new_fingerprint)
  )`)
  yield* sql`CREATE INDEX tool_drift_reports_reporter ON tool_drift_reports (reporter_peer_id, status)`
  yield* sql`CREATE INDEX tool_drift_reports_status ON tool_drift_reports (status, last_reported_at)`
})

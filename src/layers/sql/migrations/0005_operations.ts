/**
 * Operations: router leases, the catalog nodes report for display, and the audit log of state-changing actions.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE router_leases (
    peer_id VARCHAR(128) PRIMARY KEY,
    addresses_json TEXT NOT NULL,
    connected_peers_json TEXT NOT NULL,
    dht_size INTEGER NOT NULL,
    renewed_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX router_leases_expires_at ON router_leases (expires_at)`
  yield* sql`CREATE TABLE node_catalog (
    peer_id VARCHAR(128) PRIMARY KEY,
    services_json TEXT NOT NULL,
    reported_at BIGINT NOT NULL
  )`
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE TABLE audit_log (
      id BIGSERIAL PRIMARY KEY,
      at BIGINT NOT NULL,
      actor VARCHAR(1024) NOT NULL,
      action VARCHAR(64) NOT NULL,
      subject VARCHAR(1024) NOT NULL,
      details_json TEXT NOT NULL
    )`,
    orElse: () => sql`CREATE TABLE audit_log (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      at BIGINT NOT NULL,
      actor VARCHAR(1024) NOT NULL,
      action VARCHAR(64) NOT NULL,
      subject VARCHAR(1024) NOT NULL,
      details_json TEXT NOT NULL
    )`,
  })
  yield* sql`CREATE INDEX nodes_banned ON nodes (banned)`
})

/**
 * The migration set, in order. Each capability adds one file; ids never change once released.
 * Times are integer unix milliseconds (BIGINT); booleans and blobs use each dialect's own type.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Effect } from "effect"
import m0001 from "./0001_control_plane_meta.js"
import m0002 from "./0002_signing_keys.js"
import m0003 from "./0003_nodes.js"
import m0004 from "./0004_enrollment.js"
import m0005 from "./0005_operations.js"
import m0006 from "./0006_challenge_replays.js"
import m0007 from "./0007_credential_release.js"
import m0008 from "./0008_ban_version.js"
import m0009 from "./0009_tool_drift.js"

export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_control_plane_meta": m0001,
  "0002_signing_keys": m0002,
  "0003_nodes": m0003,
  "0004_enrollment": m0004,
  "0005_operations": m0005,
  "0006_challenge_replays": m0006,
  "0007_credential_release": m0007,
  "0008_ban_version": m0008,
  "0009_tool_drift": m0009,
}

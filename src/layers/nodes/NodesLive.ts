/** Nodes over SQL. Parse and SQL errors are defects: only domain outcomes leave this module. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Layer, Option, Schema } from "effect"
import { Identity, identityKey, Labels, type Node } from "../../domain/Node.js"
import * as Spans from "../../platform/Spans.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { JsonText, SqlBoolean, SqlBytes, toBlob, toBool } from "../sql/Columns.js"

const NodeRow = Schema.Struct({
  peer_id: Schema.String,
  public_key: SqlBytes,
  role: Schema.String,
  labels_json: JsonText(Labels),
  enrollment_type: Schema.Literal("bootstrap", "oidc"),
  identity_json: Schema.NullOr(JsonText(Identity)),
  owner_id: Schema.NullOr(Schema.String),
  autonomous_recovery: SqlBoolean,
  credential_digest: SqlBytes,
  credential_expires_at: Schema.Number,
  session_expires_at: Schema.NullOr(Schema.Number),
  enrolled_at: Schema.Number,
  refreshed_at: Schema.NullOr(Schema.Number),
  banned: SqlBoolean,
  banned_at: Schema.NullOr(Schema.Number),
})

const toNode = (row: typeof NodeRow.Type): Node => ({
  peerId: row.peer_id,
  publicKey: new Uint8Array(row.public_key),
  role: row.role,
  labels: row.labels_json,
  enrollmentType: row.enrollment_type,
  identity: row.identity_json ?? undefined,
  ownerId: row.owner_id ?? undefined,
  autonomousRecovery: row.autonomous_recovery,
  credentialDigest: new Uint8Array(row.credential_digest),
  credentialExpiresAt: row.credential_expires_at,
  sessionExpiresAt: row.session_expires_at ?? undefined,
  enrolledAt: row.enrolled_at,
  refreshedAt: row.refreshed_at ?? undefined,
  banned: row.banned,
  bannedAt: row.banned_at ?? undefined,
})

const toRow = (node: Node) => ({
  peer_id: node.peerId,
  public_key: toBlob(node.publicKey),
  role: node.role,
  labels_json: JSON.stringify(node.labels),
  enrollment_type: node.enrollmentType,
  identity_json: node.identity === undefined ? null : JSON.stringify(node.identity),
  identity_key: node.identity === undefined ? null : identityKey(node.identity),
  owner_id: node.ownerId ?? null,
  autonomous_recovery: toBool(node.autonomousRecovery),
  credential_digest: toBlob(node.credentialDigest),
  credential_expires_at: node.credentialExpiresAt,
  session_expires_at: node.sessionExpiresAt ?? null,
  enrolled_at: node.enrolledAt,
  refreshed_at: node.refreshedAt ?? null,
  banned: toBool(node.banned),
  banned_at: node.bannedAt ?? null,
})

export const COLUMNS = `peer_id, public_key, role, labels_json, enrollment_type, identity_json, owner_id,
  autonomous_recovery, credential_digest, credential_expires_at, session_expires_at, enrolled_at, refreshed_at,
  banned, banned_at`

export const layer = Layer.effect(
  Nodes,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findOne = SqlSchema.findOne({
      Request: Schema.String,
      Result: NodeRow,
      execute: (peerId) => sql`SELECT ${sql.literal(COLUMNS)} FROM nodes WHERE peer_id = ${peerId}`,
    })

    const all = SqlSchema.findAll({
      Request: Schema.NullOr(Schema.String),
      Result: NodeRow,
      execute: (owner) =>
        owner === null
          ? sql`SELECT ${sql.literal(COLUMNS)} FROM nodes ORDER BY enrolled_at DESC, peer_id`
          : sql`SELECT ${sql.literal(COLUMNS)} FROM nodes WHERE owner_id = ${owner} ORDER BY enrolled_at DESC, peer_id`,
    })

    return {
      list: (filter = {}) =>
        all(filter.ownerId ?? null).pipe(
          Effect.map((rows) => rows.map(toNode)),
          Effect.orDie,
        ),
      find: (peerId) => findOne(peerId).pipe(Effect.map(Option.map(toNode)), Effect.orDie),

      create: (node) => {
        const row = toRow(node)
        return sql`INSERT INTO nodes ${sql.insert(row)} ON CONFLICT (peer_id) DO NOTHING RETURNING peer_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
          Spans.withSpan("Nodes.create", {}),
        )
      },

      reissue: (r) =>
        sql`UPDATE nodes SET credential_digest = ${toBlob(r.digest)}, credential_expires_at = ${r.expiresAt},
            refreshed_at = ${r.now}
          WHERE peer_id = ${r.peerId} AND banned = ${toBool(false)} AND enrollment_type = 'bootstrap'
            AND role = ${r.role}
          RETURNING peer_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
        ),

      reregister: (node) => {
        const row = toRow(node)
        return sql`UPDATE nodes SET role = ${row.role}, labels_json = ${row.labels_json},
            identity_json = ${row.identity_json}, credential_digest = ${row.credential_digest},
            credential_expires_at = ${row.credential_expires_at}, session_expires_at = ${row.session_expires_at},
            enrolled_at = ${row.enrolled_at}, refreshed_at = NULL
          WHERE peer_id = ${row.peer_id} AND banned = ${toBool(false)} AND enrollment_type = 'oidc'
            AND identity_key = ${row.identity_key}
          RETURNING peer_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
          Effect.withSpan("Nodes.reregister"),
        )
      },

      setAutonomousRecovery: (peerId, enabled) =>
        sql`UPDATE nodes SET autonomous_recovery = ${toBool(enabled)} WHERE peer_id = ${peerId} RETURNING peer_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
        ),

      count: sql<{ n: number }>`SELECT COUNT(*) AS n FROM nodes`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0)),
        Effect.orDie,
      ),

      rotateCredential: (r) =>
        sql`UPDATE nodes SET credential_digest = ${toBlob(r.digest)}, credential_expires_at = ${r.expiresAt},
            refreshed_at = ${r.now}
          WHERE peer_id = ${r.peerId} AND credential_digest = ${toBlob(r.previousDigest)}
            AND banned = ${toBool(false)}
          RETURNING peer_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
        ),
    }
  }),
)

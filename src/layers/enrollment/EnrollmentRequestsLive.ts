/**
 * EnrollmentRequests over SQL; resolving and releasing are conditional updates, so a request is resolved exactly once
 * and its credential handed over once.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Layer, Option, Schema } from "effect"
import type { EnrollmentRequest } from "../../domain/EnrollmentRequest.js"
import { Labels } from "../../domain/Node.js"
import { EnrollmentRequests } from "../../services/enrollment/EnrollmentRequests.js"
import { JsonText, SqlBytes, toBlob } from "../sql/Columns.js"

const RequestRow = Schema.Struct({
  id: Schema.String,
  peer_id: Schema.String,
  public_key: SqlBytes,
  requested_role: Schema.String,
  labels_json: JsonText(Labels),
  token_id: Schema.String,
  status: Schema.Literal("pending", "approved", "rejected"),
  created_at: Schema.Number,
  resolved_at: Schema.NullOr(Schema.Number),
  resolved_by: Schema.NullOr(Schema.String),
  released_at: Schema.NullOr(Schema.Number),
})

const toRequest = (row: typeof RequestRow.Type): EnrollmentRequest => ({
  id: row.id,
  peerId: row.peer_id,
  publicKey: new Uint8Array(row.public_key),
  requestedRole: row.requested_role,
  labels: row.labels_json,
  tokenId: row.token_id,
  status: row.status,
  createdAt: row.created_at,
  resolvedAt: row.resolved_at ?? undefined,
  resolvedBy: row.resolved_by ?? undefined,
  releasedAt: row.released_at ?? undefined,
})

const COLUMNS = `id, peer_id, public_key, requested_role, labels_json, token_id, status, created_at, resolved_at,
  resolved_by, released_at`

export const layer = Layer.effect(
  EnrollmentRequests,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: RequestRow,
      execute: (id) => sql`SELECT ${sql.literal(COLUMNS)} FROM enrollment_requests WHERE id = ${id}`,
    })
    const byPeer = SqlSchema.findOne({
      Request: Schema.String,
      Result: RequestRow,
      execute: (peerId) => sql`SELECT ${sql.literal(COLUMNS)} FROM enrollment_requests WHERE peer_id = ${peerId}`,
    })
    const all = SqlSchema.findAll({
      Request: Schema.NullOr(Schema.String),
      Result: RequestRow,
      execute: (status) =>
        status === null
          ? sql`SELECT ${sql.literal(COLUMNS)} FROM enrollment_requests ORDER BY created_at DESC, id`
          : sql`SELECT ${sql.literal(COLUMNS)} FROM enrollment_requests WHERE status = ${status}
              ORDER BY created_at DESC, id`,
    })
    return {
      find: (id) => byId(id).pipe(Effect.map(Option.map(toRequest)), Effect.orDie),
      findByPeer: (peerId) => byPeer(peerId).pipe(Effect.map(Option.map(toRequest)), Effect.orDie),
      list: (status) =>
        all(status ?? null).pipe(
          Effect.map((rows) => rows.map(toRequest)),
          Effect.orDie,
        ),
      save: (request) => {
        const row = {
          id: request.id,
          peer_id: request.peerId,
          public_key: toBlob(request.publicKey),
          requested_role: request.requestedRole,
          labels_json: JSON.stringify(request.labels),
          token_id: request.tokenId,
          status: request.status,
          created_at: request.createdAt,
          resolved_at: request.resolvedAt ?? null,
          resolved_by: request.resolvedBy ?? null,
          released_at: request.releasedAt ?? null,
        }
        const { peer_id: _, ...updates } = row
        return sql`INSERT INTO enrollment_requests ${sql.insert(row)}
          ON CONFLICT (peer_id) DO UPDATE SET ${sql.update(updates)}`.pipe(Effect.asVoid, Effect.orDie)
      },
      resolve: (id, status, by, now) =>
        sql`UPDATE enrollment_requests SET status = ${status}, resolved_at = ${now}, resolved_by = ${by}
          WHERE id = ${id} AND status = 'pending' RETURNING id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
        ),
      release: (id, now) =>
        sql`UPDATE enrollment_requests SET released_at = ${now}
          WHERE id = ${id} AND status = 'approved' AND released_at IS NULL RETURNING id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
        ),
    }
  }),
)

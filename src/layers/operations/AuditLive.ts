/** Audit over SQL: an append-only table paged by id. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Effect, Layer, Schema } from "effect"
import { type Action, Audit, type AuditEntry } from "../../services/operations/Audit.js"
import { JsonText } from "../sql/Columns.js"

const EntryRow = Schema.Struct({
  id: Schema.Number,
  at: Schema.Number,
  actor: Schema.String,
  action: Schema.String,
  subject: Schema.String,
  details_json: JsonText(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})

export const layer = Layer.effect(
  Audit,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const select = SqlSchema.findAll({
      Request: Schema.Struct({
        before: Schema.Number,
        limit: Schema.Number,
        actor: Schema.optional(Schema.String),
        action: Schema.optional(Schema.String),
      }),
      Result: EntryRow,
      execute: ({ before, limit, actor, action }) => sql`SELECT id, at, actor, action, subject, details_json
        FROM audit_log WHERE ${sql.and([
          sql`id < ${before}`,
          ...(actor === undefined ? [] : [sql`actor = ${actor}`]),
          ...(action === undefined ? [] : [sql`action = ${action}`]),
        ])} ORDER BY id DESC LIMIT ${limit}`,
    })
    return {
      record: (entry) =>
        Effect.flatMap(
          Clock.currentTimeMillis,
          (now) =>
            sql`INSERT INTO audit_log ${sql.insert({
              at: now,
              actor: entry.actor,
              action: entry.action,
              subject: entry.subject,
              details_json: JSON.stringify(entry.details ?? {}),
            })}`,
        ).pipe(Effect.asVoid, Effect.orDie),
      page: ({ before, limit, actor, action }) =>
        select({
          before: before ?? Number.MAX_SAFE_INTEGER,
          limit: limit + 1,
          ...(actor === undefined ? {} : { actor }),
          ...(action === undefined ? {} : { action }),
        }).pipe(
          Effect.map((rows) => {
            const entries: Array<AuditEntry> = rows.slice(0, limit).map((r) => ({
              id: r.id,
              at: r.at,
              actor: r.actor,
              action: r.action as Action,
              subject: r.subject,
              details: r.details_json,
            }))
            return { entries, next: rows.length > limit ? entries[entries.length - 1]?.id : undefined }
          }),
          Effect.orDie,
        ),
    }
  }),
)

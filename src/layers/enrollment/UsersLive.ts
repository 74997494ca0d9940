/** Users over SQL. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Effect, Layer, Schema } from "effect"
import { identityKey } from "../../domain/Node.js"
import { type User, Users } from "../../services/enrollment/Users.js"

const UserRow = Schema.Struct({
  id: Schema.String,
  issuer: Schema.String,
  subject: Schema.String,
  email: Schema.NullOr(Schema.String),
  first_seen_at: Schema.Number,
  last_seen_at: Schema.Number,
})

const toUser = (row: typeof UserRow.Type): User => ({
  id: row.id,
  issuer: row.issuer,
  subject: row.subject,
  email: row.email ?? undefined,
  firstSeenAt: row.first_seen_at,
  lastSeenAt: row.last_seen_at,
})

export const layer = Layer.effect(
  Users,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const upsert = SqlSchema.single({
      Request: Schema.Struct({
        id: Schema.String,
        issuer: Schema.String,
        subject: Schema.String,
        email: Schema.NullOr(Schema.String),
        now: Schema.Number,
      }),
      Result: UserRow,
      execute: (u) => sql`INSERT INTO users (id, issuer, subject, email, first_seen_at, last_seen_at)
        VALUES (${u.id}, ${u.issuer}, ${u.subject}, ${u.email}, ${u.now}, ${u.now})
        ON CONFLICT (id) DO UPDATE SET email = excluded.email, last_seen_at = excluded.last_seen_at
        RETURNING id, issuer, subject, email, first_seen_at, last_seen_at`,
    })
    const all = SqlSchema.findAll({
      Request: Schema.Void,
      Result: UserRow,
      execute: () => sql`SELECT id, issuer, subject, email, first_seen_at, last_seen_at FROM users ORDER BY id`,
    })
    return {
      seen: (identity) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          upsert({
            id: identityKey(identity),
            issuer: identity.issuer,
            subject: identity.subject,
            email: identity.email ?? null,
            now,
          }),
        ).pipe(Effect.map(toUser), Effect.orDie),
      list: all().pipe(
        Effect.map((rows) => rows.map(toUser)),
        Effect.orDie,
      ),
    }
  }),
)

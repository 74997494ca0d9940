/** BootstrapTokens over SQL; the secret never reaches the database, only its SHA-256. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import * as Token from "../../domain/BootstrapToken.js"
import { NotFound } from "../../domain/Errors.js"
import { BootstrapTokens } from "../../services/enrollment/BootstrapTokens.js"
import { Audit } from "../../services/operations/Audit.js"
import { SqlBoolean, toBlob, toBool } from "../sql/Columns.js"

const TokenRow = Schema.Struct({
  id: Schema.String,
  role: Schema.String,
  max_usages: Schema.Number,
  usages_count: Schema.Number,
  description: Schema.String,
  autonomous_recovery: SqlBoolean,
  owner_id: Schema.NullOr(Schema.String),
  created_at: Schema.Number,
  expires_at: Schema.Number,
  revoked_at: Schema.NullOr(Schema.Number),
  last_used_at: Schema.NullOr(Schema.Number),
})

const toToken = (row: typeof TokenRow.Type): Token.BootstrapToken => ({
  id: row.id,
  role: row.role,
  maxUsages: row.max_usages,
  usagesCount: row.usages_count,
  description: row.description,
  autonomousRecovery: row.autonomous_recovery,
  ownerId: row.owner_id ?? undefined,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at ?? undefined,
  lastUsedAt: row.last_used_at ?? undefined,
})

const COLUMNS = `id, role, max_usages, usages_count, description, autonomous_recovery, owner_id, created_at,
  expires_at, revoked_at, last_used_at`

export const layer = Layer.effect(
  BootstrapTokens,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const audit = yield* Audit

    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: TokenRow,
      execute: (id) => sql`SELECT ${sql.literal(COLUMNS)} FROM bootstrap_tokens WHERE id = ${id}`,
    })
    const byHash = SqlSchema.findOne({
      Request: Schema.Uint8ArrayFromSelf,
      Result: TokenRow,
      execute: (hash) => sql`SELECT ${sql.literal(COLUMNS)} FROM bootstrap_tokens WHERE token_hash = ${toBlob(hash)}`,
    })
    const all = SqlSchema.findAll({
      Request: Schema.NullOr(Schema.String),
      Result: TokenRow,
      execute: (owner) =>
        owner === null
          ? sql`SELECT ${sql.literal(COLUMNS)} FROM bootstrap_tokens ORDER BY created_at DESC, id`
          : sql`SELECT ${sql.literal(COLUMNS)} FROM bootstrap_tokens WHERE owner_id = ${owner}
              ORDER BY created_at DESC, id`,
    })

    const find = (id: string) => byId(id).pipe(Effect.map(Option.map(toToken)), Effect.orDie)

    return {
      mint: (request) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const { id, secret } = Token.generate()
          const token: Token.BootstrapToken = {
            id,
            role: request.role,
            maxUsages: request.maxUsages,
            usagesCount: 0,
            description: request.description,
            autonomousRecovery: request.autonomousRecovery,
            ownerId: request.ownerId,
            createdAt: now,
            expiresAt: now + request.ttlHours * 3_600_000,
            revokedAt: undefined,
            lastUsedAt: undefined,
          }
          yield* sql`INSERT INTO bootstrap_tokens ${sql.insert({
            id,
            token_hash: toBlob(Token.hash(secret)),
            role: token.role,
            max_usages: token.maxUsages,
            usages_count: 0,
            description: token.description,
            autonomous_recovery: toBool(token.autonomousRecovery),
            owner_id: token.ownerId ?? null,
            created_at: now,
            expires_at: token.expiresAt,
          })}`.pipe(Effect.orDie)
          yield* audit.record({
            actor: request.actor,
            action: "token.minted",
            subject: id,
            details: { role: token.role, max_usages: token.maxUsages, autonomous_recovery: token.autonomousRecovery },
          })
          yield* Effect.logInfo("bootstrap token minted").pipe(
            Effect.annotateLogs({ token_id: id, role: token.role, owner: token.ownerId ?? "operator" }),
          )
          return { token, secret }
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die), Effect.withSpan("BootstrapTokens.mint")),

      list: (filter = {}) =>
        all(filter.ownerId ?? null).pipe(
          Effect.map((rows) => rows.map(toToken)),
          Effect.orDie,
        ),

      find,

      findBySecret: (secret) => byHash(Token.hash(secret)).pipe(Effect.map(Option.map(toToken)), Effect.orDie),

      revoke: (id, actor) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const changed = yield* sql`UPDATE bootstrap_tokens SET revoked_at = ${now}
            WHERE id = ${id} AND revoked_at IS NULL RETURNING id`.pipe(Effect.orDie)
          if (changed.length > 0) yield* audit.record({ actor, action: "token.revoked", subject: id })
          return yield* find(id).pipe(
            Effect.flatMap(
              Option.match({
                onNone: () => Effect.fail(new NotFound({ message: "no such bootstrap token" })),
                onSome: Effect.succeed,
              }),
            ),
          )
        }),

      spend: (id, now) =>
        sql`UPDATE bootstrap_tokens SET usages_count = usages_count + 1, last_used_at = ${now}
          WHERE id = ${id} AND usages_count < max_usages AND revoked_at IS NULL AND expires_at > ${now}
          RETURNING id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie,
        ),
    }
  }),
)

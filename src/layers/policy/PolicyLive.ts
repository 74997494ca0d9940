/** Policy over SQL: one row holding the document as JSON and its version. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Effect, Either, Layer, Option, Schema } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { BadRequest } from "../../domain/Errors.js"
import * as PolicyRules from "../../domain/Policy.js"
import { MeshEvents } from "../../services/events/MeshEvents.js"
import { type Actor, Audit } from "../../services/operations/Audit.js"
import { Policy, type PolicySnapshot } from "../../services/policy/Policy.js"

const Role = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  allowedTargets: Schema.Array(Schema.String),
  allowedServices: Schema.Array(Schema.String),
  allowedLabels: Schema.Array(Schema.String),
})
const ToolPin = Schema.Struct({
  tool: Schema.String,
  fingerprint: Schema.String,
  peerLabels: Schema.Record({ key: Schema.String, value: Schema.String }),
})
const Document = Schema.Struct({
  roles: Schema.Array(Role),
  bindings: Schema.Array(Schema.Struct({ role: Schema.String, members: Schema.Array(Schema.String) })),
  // Absent from a row written before tool pins existed.
  toolPins: Schema.optionalWith(Schema.Array(ToolPin), { default: () => [] }),
})
const PolicyRow = Schema.Struct({
  document: Schema.parseJson(Document),
  version: Schema.Number,
  updated_at: Schema.Number,
})

export const layer = Layer.effect(
  Policy,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const audit = yield* Audit
    const events = yield* MeshEvents
    const config = yield* ControlPlaneConfig
    const select = SqlSchema.findOne({
      Request: Schema.Void,
      Result: PolicyRow,
      execute: () => sql`SELECT document, version, updated_at FROM policy WHERE id = 1`,
    })
    const current: Effect.Effect<PolicySnapshot> = select().pipe(
      Effect.map(
        Option.match({
          onNone: () => ({ document: PolicyRules.empty, version: 0, updatedAt: undefined }),
          onSome: (row) => ({ document: row.document, version: row.version, updatedAt: row.updated_at }),
        }),
      ),
      Effect.orDie,
    )

    /** The row as it stands, locked for the rest of the transaction where the database can (postgres). */
    const locked = sql.onDialectOrElse({
      pg: () => sql`SELECT document, version, updated_at FROM policy WHERE id = 1 FOR UPDATE`,
      orElse: () => sql`SELECT document, version, updated_at FROM policy WHERE id = 1`,
    })
    const readLocked = Effect.flatMap(locked, (rows) =>
      rows.length === 0
        ? Effect.succeed(PolicyRules.empty)
        : Effect.map(Schema.decodeUnknown(PolicyRow)(rows[0]), (row) => row.document as PolicyRules.Document),
    ).pipe(Effect.orDie)

    /** Validates and writes `document`, with its audit record; the caller holds the transaction. */
    const store = (document: PolicyRules.Document, actor: Actor) =>
      Effect.gen(function* () {
        const valid = yield* Either.match(PolicyRules.validate(document, config.issuers), {
          onLeft: (reason) => Effect.fail(new BadRequest({ message: `invalid policy: ${reason}` })),
          onRight: Effect.succeed,
        })
        const now = yield* Clock.currentTimeMillis
        const json = JSON.stringify(Schema.encodeSync(Document)({ ...valid, toolPins: valid.toolPins ?? [] }))
        const [row] = yield* sql<{ version: number }>`INSERT INTO policy (id, document, version, updated_at)
          VALUES (1, ${json}, 1, ${now})
          ON CONFLICT (id) DO UPDATE SET document = excluded.document, version = policy.version + 1,
            updated_at = excluded.updated_at
          RETURNING version`.pipe(Effect.orDie)
        yield* audit.record({
          actor,
          action: "policy.replaced",
          subject: `policy v${row?.version ?? 0}`,
          details: { roles: valid.roles.length, bindings: valid.bindings.length },
        })
        yield* Effect.logInfo("policy replaced").pipe(Effect.annotateLogs({ version: row?.version ?? 0 }))
        return { document: valid, version: row?.version ?? 0, updatedAt: now } satisfies PolicySnapshot
      })

    /** Announced once the transaction has committed, so a node that re-reads at the event sees the new policy. */
    const committed = <E, R>(write: Effect.Effect<PolicySnapshot, E, R>) =>
      write.pipe(
        sql.withTransaction,
        Effect.catchTag("SqlError", Effect.die),
        Effect.tap((snapshot) => events.publish({ type: "policy_update", sequence: snapshot.version })),
      )

    const replace = (document: PolicyRules.Document, actor: Actor) =>
      committed(store(document, actor)).pipe(Effect.withSpan("Policy.replace"))

    const amend = <E, R>(
      change: (current: PolicyRules.Document) => Effect.Effect<PolicyRules.Document, E, R>,
      actor: Actor,
    ) =>
      committed(Effect.flatMap(readLocked, change).pipe(Effect.flatMap((document) => store(document, actor)))).pipe(
        Effect.withSpan("Policy.amend"),
      )

    return { current, replace, amend }
  }),
)

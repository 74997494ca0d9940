/**
 * ToolDriftReports over SQL (`tool_drift_reports`). A report is taken only from an admitted node that signed it, body
 * included, with the key it enrolled with; it is stored once per (provider, tool, new fingerprint), later reports of
 * the same counting up; a node has at most MAX_OPEN_PER_NODE open at a time. An approval adds the pin through
 * Policy.amend, the path of every policy edit (validated, audited, announced), and closes the report in the same
 * transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Effect, Either, Layer, Option, Schema } from "effect"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge } from "../../domain/Errors.js"
import * as ToolDrift from "../../domain/ToolDrift.js"
import type * as ToolPins from "../../domain/ToolPins.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { Credentials } from "../../services/identity/Credentials.js"
import { makeAdmittedCaller } from "../../services/nodes/AdmittedCaller.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { Audit } from "../../services/operations/Audit.js"
import { Policy } from "../../services/policy/Policy.js"
import {
  LIST_LIMIT,
  MAX_OPEN_PER_NODE,
  type StoredReport,
  ToolDriftReports,
} from "../../services/tooldrift/ToolDriftReports.js"
import { JsonText } from "../sql/Columns.js"

const Labels = Schema.Record({ key: Schema.String, value: Schema.String })

const Row = Schema.Struct({
  id: Schema.Union(Schema.Number, Schema.String),
  reporter_peer_id: Schema.String,
  provider_peer_id: Schema.String,
  provider_labels_json: JsonText(Labels),
  tool: Schema.String,
  against: Schema.Literal(...ToolDrift.AGAINST),
  old_fingerprint: Schema.String,
  old_definition: Schema.NullOr(Schema.String),
  new_fingerprint: Schema.String,
  new_definition: Schema.NullOr(Schema.String),
  status: Schema.Literal("open", "approved", "dismissed"),
  reports: Schema.Number,
  first_reported_at: Schema.Number,
  last_reported_at: Schema.Number,
  resolved_at: Schema.NullOr(Schema.Number),
  resolved_by: Schema.NullOr(Schema.String),
  approved_for_json: Schema.NullOr(JsonText(Labels)),
})
type Row = typeof Row.Type

const COLUMNS = `id, reporter_peer_id, provider_peer_id, provider_labels_json, tool, against, old_fingerprint,
  old_definition, new_fingerprint, new_definition, status, reports, first_reported_at, last_reported_at, resolved_at,
  resolved_by, approved_for_json`

const fromRow = (row: Row): StoredReport => ({
  id: String(row.id),
  reporterPeerId: row.reporter_peer_id,
  providerPeerId: row.provider_peer_id,
  providerLabels: row.provider_labels_json,
  tool: row.tool,
  against: row.against,
  oldFingerprint: row.old_fingerprint,
  oldDefinition: row.old_definition ?? undefined,
  newFingerprint: row.new_fingerprint,
  newDefinition: row.new_definition ?? undefined,
  status: row.status,
  reports: row.reports,
  firstReportedAt: row.first_reported_at,
  lastReportedAt: row.last_reported_at,
  resolvedAt: row.resolved_at ?? undefined,
  resolvedBy: row.resolved_by ?? undefined,
  approvedFor: row.approved_for_json ?? undefined,
})

const sameLabels = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v)

export const layer = Layer.effect(
  ToolDriftReports,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const nodes = yield* Nodes
    const challenges = yield* Challenges
    const policy = yield* Policy
    const audit = yield* Audit
    const admittedCaller = makeAdmittedCaller(yield* Credentials, nodes)

    const findById = SqlSchema.findOne({
      Request: Schema.String,
      Result: Row,
      execute: (id) => sql`SELECT ${sql.literal(COLUMNS)} FROM tool_drift_reports WHERE id = ${Number(id)}`,
    })
    const find = (id: string) =>
      /^\d{1,15}$/.test(id)
        ? findById(id).pipe(Effect.orDie, Effect.map(Option.map(fromRow)))
        : Effect.succeed(Option.none<StoredReport>())
    const listAll = SqlSchema.findAll({
      Request: Schema.String,
      Result: Row,
      execute: (status) =>
        status === "all"
          ? sql`SELECT ${sql.literal(COLUMNS)} FROM tool_drift_reports
              ORDER BY last_reported_at DESC, id DESC LIMIT ${LIST_LIMIT}`
          : sql`SELECT ${sql.literal(COLUMNS)} FROM tool_drift_reports WHERE status = ${status}
              ORDER BY last_reported_at DESC, id DESC LIMIT ${LIST_LIMIT}`,
    })

    /** Closes an open report; a report someone resolved first is a Conflict naming how. */
    const close = (id: string, status: "approved" | "dismissed", actor: string, approvedFor?: object) =>
      Effect.gen(function* () {
        const found = yield* find(id)
        if (Option.isNone(found)) return yield* new NotFound({ message: "no such tool drift report" })
        const now = yield* Clock.currentTimeMillis
        const updated = yield* sql`UPDATE tool_drift_reports SET status = ${status}, resolved_at = ${now},
            resolved_by = ${actor}, approved_for_json = ${approvedFor === undefined ? null : JSON.stringify(approvedFor)}
          WHERE id = ${Number(id)} AND status = 'open' RETURNING id`.pipe(Effect.orDie)
        if (updated.length === 0) {
          const again = yield* find(id)
          const by = Option.flatMap(again, (r) => Option.fromNullable(r.resolvedBy))
          return yield* new Conflict({
            message: `this report was already ${Option.match(again, { onNone: () => "resolved", onSome: (r) => r.status })}${Option.match(by, { onNone: () => "", onSome: (b) => ` by ${b}` })}`,
          })
        }
        yield* audit.record({
          actor,
          action: status === "approved" ? "tool_drift.approved" : "tool_drift.dismissed",
          subject: found.value.tool,
          details: {
            report: id,
            provider: found.value.providerPeerId,
            fingerprint: found.value.newFingerprint,
            ...(approvedFor === undefined ? {} : { peer_labels: approvedFor }),
          },
        })
        return { ...found.value, status, resolvedAt: now, resolvedBy: actor }
      })

    return ToolDriftReports.of({
      report: (credential, proof, report) =>
        Effect.gen(function* () {
          const facts = yield* admittedCaller(credential)
          const node = yield* nodes.find(facts.peerId)
          if (Option.isNone(node)) return yield* new Forbidden({ message: "node is not admitted" })
          // The key the node enrolled with signed this body: its credential alone is seen by every peer it meets.
          yield* challenges.verify({
            endpoint: "nodes-tool-drift",
            peerId: facts.peerId,
            publicKey: node.value.publicKey,
            unixMs: proof.unixMs,
            signature: proof.signature,
            bound: proof.bodyDigest,
          })
          const valid = yield* Either.match(ToolDrift.validate(report), {
            onLeft: (problem) =>
              problem._tag === "TooLarge"
                ? Effect.fail(new PayloadTooLarge({ message: problem.message }))
                : Effect.fail(new BadRequest({ message: problem.message })),
            onRight: Effect.succeed,
          })
          const now = yield* Clock.currentTimeMillis
          const again = yield* sql`UPDATE tool_drift_reports SET reports = reports + 1, last_reported_at = ${now}
            WHERE provider_peer_id = ${valid.providerPeerId} AND tool = ${valid.tool}
              AND new_fingerprint = ${valid.newFingerprint} RETURNING id`
          if (again.length > 0) return
          const [open] = yield* sql<{ count: number | string }>`SELECT COUNT(*) AS count FROM tool_drift_reports
            WHERE reporter_peer_id = ${facts.peerId} AND status = 'open'`
          if (Number(open?.count ?? 0) >= MAX_OPEN_PER_NODE) {
            return yield* new Conflict({
              message: `this node has ${MAX_OPEN_PER_NODE} open tool drift reports; an operator must resolve some first`,
            })
          }
          yield* sql`INSERT INTO tool_drift_reports ${sql.insert({
            reporter_peer_id: facts.peerId,
            provider_peer_id: valid.providerPeerId,
            provider_labels_json: JSON.stringify(valid.providerLabels),
            tool: valid.tool,
            against: valid.against,
            old_fingerprint: valid.oldFingerprint,
            old_definition: valid.oldDefinition === "" ? null : valid.oldDefinition,
            new_fingerprint: valid.newFingerprint,
            new_definition: valid.newDefinition === "" ? null : valid.newDefinition,
            status: "open",
            reports: 1,
            first_reported_at: now,
            last_reported_at: now,
          })} ON CONFLICT (provider_peer_id, tool, new_fingerprint) DO UPDATE
            SET reports = tool_drift_reports.reports + 1, last_reported_at = excluded.last_reported_at`
          // Nothing of the definitions: they are the provider's text.
          yield* Effect.logInfo("tool drift reported").pipe(
            Effect.annotateLogs({ reporter: facts.peerId, provider: valid.providerPeerId, against: valid.against }),
          )
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),

      list: (status) =>
        listAll(status).pipe(
          Effect.map((rows) => rows.map(fromRow)),
          Effect.orDie,
        ),

      approve: (id, options, actor) =>
        Effect.gen(function* () {
          const found = yield* find(id)
          if (Option.isNone(found)) return yield* new NotFound({ message: "no such tool drift report" })
          const report = found.value
          let peerLabels: Readonly<Record<string, string>> = {}
          if (options.forProviderLabels) {
            // The provider's labels as its own record holds them, not as the reporting node said.
            const provider = yield* nodes.find(report.providerPeerId)
            if (Option.isNone(provider)) {
              return yield* new BadRequest({
                message: "the provider is not a node of this control plane: approve for every provider instead",
              })
            }
            if (Object.keys(provider.value.labels).length === 0) {
              return yield* new BadRequest({
                message: "the provider attests no labels: approve for every provider instead",
              })
            }
            peerLabels = provider.value.labels
          }
          const pin: ToolPins.ToolPin = { tool: report.tool, fingerprint: report.newFingerprint, peerLabels }
          let closed: StoredReport | undefined
          const snapshot = yield* policy.amend(
            (document) =>
              Effect.gen(function* () {
                closed = yield* close(id, "approved", actor, peerLabels)
                const pins = document.toolPins ?? []
                const already = pins.some(
                  (p) =>
                    p.tool === report.tool &&
                    p.fingerprint === report.newFingerprint &&
                    sameLabels(p.peerLabels, peerLabels),
                )
                return already ? document : { ...document, toolPins: [...pins, pin] }
              }),
            actor,
          )
          return { report: { ...(closed ?? report), approvedFor: peerLabels }, policyVersion: snapshot.version }
        }),

      dismiss: (id, actor) =>
        close(id, "dismissed", actor).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),
    })
  }),
)

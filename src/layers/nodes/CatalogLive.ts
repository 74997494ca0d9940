/** Catalog over SQL: one row per node, replaced by each report. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { BadRequest, Forbidden } from "../../domain/Errors.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { Credentials } from "../../services/identity/Credentials.js"
import { makeAdmittedCaller } from "../../services/nodes/AdmittedCaller.js"
import { Catalog, MAX_SERVICES } from "../../services/nodes/Catalog.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { JsonText } from "../sql/Columns.js"

const Service = Schema.Struct({
  type: Schema.Literal("mcp", "inference", "a2a", "egress", "unspecified"),
  name: Schema.String,
  description: Schema.String,
})
const Row = Schema.Struct({
  peer_id: Schema.String,
  services_json: JsonText(Schema.Array(Service)),
  reported_at: Schema.Number,
})

export const layer = Layer.effect(
  Catalog,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const nodes = yield* Nodes
    const challenges = yield* Challenges
    const admittedCaller = makeAdmittedCaller(yield* Credentials, nodes)
    const all = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`SELECT peer_id, services_json, reported_at FROM node_catalog ORDER BY peer_id`,
    })
    return {
      report: (credential, proof, services) =>
        Effect.gen(function* () {
          if (services.length > MAX_SERVICES)
            return yield* new BadRequest({ message: `at most ${MAX_SERVICES} services` })
          const facts = yield* admittedCaller(credential)
          const node = yield* nodes.find(facts.peerId)
          if (Option.isNone(node)) return yield* new Forbidden({ message: "node is not admitted" })
          // As /refresh: the key the node enrolled with signed this report, not just anyone holding its credential.
          yield* challenges.verify({
            endpoint: "nodes-catalog",
            peerId: facts.peerId,
            publicKey: node.value.publicKey,
            unixMs: proof.unixMs,
            signature: proof.signature,
          })
          const now = yield* Clock.currentTimeMillis
          const row = { peer_id: facts.peerId, services_json: JSON.stringify(services), reported_at: now }
          yield* sql`INSERT INTO node_catalog ${sql.insert(row)}
            ON CONFLICT (peer_id) DO UPDATE SET services_json = excluded.services_json,
              reported_at = excluded.reported_at`.pipe(Effect.orDie)
        }),
      all: all().pipe(
        Effect.map((rows) =>
          rows.map((r) => ({ peerId: r.peer_id, services: r.services_json, reportedAt: r.reported_at })),
        ),
        Effect.orDie,
      ),
    }
  }),
)

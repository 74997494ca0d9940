/** Handlers of the operator's node actions. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { NotFound } from "../../domain/Errors.js"
import type { BanOutcome } from "../../services/nodes/Bans.js"
import { Bans } from "../../services/nodes/Bans.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { Audit, OPERATOR } from "../../services/operations/Audit.js"
import { ControlPlaneApi } from "../Api.js"

const view = (outcome: BanOutcome, banned: boolean) => ({
  peer_id: outcome.peerId,
  banned,
  identity: outcome.identityKey ?? null,
  changed: outcome.changed,
})

export const AdminNodesHttpLive = HttpApiBuilder.group(ControlPlaneApi, "adminNodes", (handlers) =>
  Effect.gen(function* () {
    const bans = yield* Bans
    const nodes = yield* Nodes
    const audit = yield* Audit
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("revoke", ({ payload }) => Effect.map(bans.ban(payload.peer_id, OPERATOR), (o) => view(o, true)))
      .handle("unban", ({ path }) => Effect.map(bans.unban(path.peer_id, OPERATOR), (o) => view(o, false)))
      .handle("autonomousRecovery", ({ path, payload }) =>
        Effect.gen(function* () {
          const found = yield* nodes.setAutonomousRecovery(path.peer_id, payload.enabled)
          if (!found) return yield* new NotFound({ message: "no such node" })
          yield* audit.record({
            actor: OPERATOR,
            action: "node.autonomous_recovery",
            subject: path.peer_id,
            details: { enabled: payload.enabled },
          })
          return { peer_id: path.peer_id, autonomous_recovery: payload.enabled }
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die)),
      )
  }),
)

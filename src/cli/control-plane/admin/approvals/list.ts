/** `mesh-control-plane admin approvals list`: GET /admin/enrollments. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import type { RequestView } from "./View.js"

const status = Options.choice("status", ["pending", "approved", "rejected", "all"]).pipe(
  Options.withDefault("pending" as const),
  Options.withDescription("Which requests to list. Default: pending, those waiting for an operator."),
)

export const list = Command.make("list", { ...connection, status }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const requests = (yield* request(cp, "GET", `/admin/enrollments?status=${flags.status}`))
      .json as ReadonlyArray<RequestView>
    yield* Output.either(
      cp.json,
      requests,
      Output.table(
        ["ID", "STATUS", "PEER", "ROLE", "LABELS", "CREATED"],
        requests.map((r) => [r.id, r.status, r.peer_id, r.requested_role, Output.labels(r.labels), r.created_at]),
      ),
    )
  }),
).pipe(Command.withDescription("List enrollment requests; pending ones by default."))

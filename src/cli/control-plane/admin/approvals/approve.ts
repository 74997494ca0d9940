/** `mesh-control-plane admin approvals approve --id <id>`: POST /admin/enrollments/{id}/approve. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import { id } from "./Id.js"
import { describe, type RequestView } from "./View.js"

export const approve = Command.make("approve", { ...connection, id }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const answer = yield* request(cp, "POST", `/admin/enrollments/${encodeURIComponent(flags.id)}/approve`)
    const resolved = answer.json as RequestView
    yield* Output.either(cp.json, resolved, Console.log(describe(resolved)))
  }),
).pipe(Command.withDescription("Approve an enrollment request: the node receives its credential when it next asks."))

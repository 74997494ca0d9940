/** `mesh-control-plane admin approvals reject --id <id>`: POST /admin/enrollments/{id}/reject. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import { id } from "./Id.js"
import { describe, type RequestView } from "./View.js"

export const reject = Command.make("reject", { ...connection, id }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const answer = yield* request(cp, "POST", `/admin/enrollments/${encodeURIComponent(flags.id)}/reject`)
    const resolved = answer.json as RequestView
    yield* Output.either(cp.json, resolved, Console.log(describe(resolved)))
  }),
).pipe(Command.withDescription("Reject an enrollment request: the node is told so and gets no credential."))

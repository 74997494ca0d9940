/** `mesh-control-plane admin approvals`: the queue of bootstrap enrollments waiting for an operator. */
import * as Command from "@effect/cli/Command"
import { approve } from "./approvals/approve.js"
import { list } from "./approvals/list.js"
import { reject } from "./approvals/reject.js"

export const approvals = Command.make("approvals").pipe(
  Command.withDescription("Enrollment requests through the admin API: list them, approve or reject one."),
  Command.withSubcommands([list, approve, reject]),
)

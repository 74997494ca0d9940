/** `mesh-control-plane admin nodes list`: the nodes of GET /admin/status (which lists up to 1000). */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"

interface NodeView {
  readonly peer_id: string
  readonly role: string
  readonly state: string
  readonly labels: Readonly<Record<string, string>>
  readonly enrollment_type: string
  readonly owner: string | null
  readonly enrolled_at: string
}

export const list = Command.make("list", connection, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const status = (yield* request(cp, "GET", "/admin/status")).json as {
      readonly counts: { readonly nodes: number }
      readonly nodes: ReadonlyArray<NodeView>
    }
    yield* Output.either(
      cp.json,
      status.nodes,
      Effect.zipRight(
        Output.table(
          ["PEER", "STATE", "ROLE", "ENROLLED BY", "LABELS", "ENROLLED"],
          status.nodes.map((n) => [
            n.peer_id,
            n.state,
            n.role,
            n.owner ?? n.enrollment_type,
            Output.labels(n.labels),
            n.enrolled_at,
          ]),
        ),
        status.counts.nodes > status.nodes.length
          ? Console.log(`(${status.nodes.length} of ${status.counts.nodes} shown)`)
          : Effect.void,
      ),
    )
  }),
).pipe(Command.withDescription("List enrolled nodes with their state (admitted, expired, banned), role and labels."))

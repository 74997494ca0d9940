/** `mesh-control-plane admin nodes unban --peer <peer_id>`: POST /admin/nodes/{peer_id}/unban. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import { type BanView, describe, peer } from "./BanView.js"

export const unban = Command.make("unban", { ...connection, peer }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const view = (yield* request(cp, "POST", `/admin/nodes/${encodeURIComponent(flags.peer)}/unban`)).json as BanView
    yield* Output.either(cp.json, view, Console.log(describe(view)))
  }),
).pipe(Command.withDescription("Lift the ban of a node, and of the identity behind it, through the API."))

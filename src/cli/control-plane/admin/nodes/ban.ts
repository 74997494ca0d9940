/** `mesh-control-plane admin nodes ban --peer <peer_id>`: POST /admin/revoke. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { connect, connection, json, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import { type BanView, describe, peer } from "./BanView.js"

export const ban = Command.make("ban", { ...connection, peer }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const view = (yield* request(cp, "POST", "/admin/revoke", json({ peer_id: flags.peer }))).json as BanView
    yield* Output.either(cp.json, view, Console.log(describe(view)))
  }),
).pipe(
  Command.withDescription(
    "Ban a node, and the OIDC identity behind it, through the API; running routers and nodes refuse it at once.",
  ),
)

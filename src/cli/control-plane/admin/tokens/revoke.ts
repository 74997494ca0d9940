/** `mesh-control-plane admin tokens revoke --id <id>`: DELETE /admin/bootstrap-tokens/{id}. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Console, Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import type { TokenView } from "./View.js"

const id = Options.text("id").pipe(Options.withDescription("ID of the token (bt_...), as `tokens list` shows it."))

export const revoke = Command.make("revoke", { ...connection, id }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const answer = yield* request(cp, "DELETE", `/admin/bootstrap-tokens/${encodeURIComponent(flags.id)}`)
    const token = answer.json as TokenView
    yield* Output.either(cp.json, token, Console.log(`revoked ${token.id} (state: ${token.state})`))
  }),
).pipe(Command.withDescription("Revoke a bootstrap token: no enrollment may use it from now on."))

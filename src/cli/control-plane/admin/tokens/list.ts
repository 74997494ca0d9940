/** `mesh-control-plane admin tokens list`: GET /admin/bootstrap-tokens. */
import * as Command from "@effect/cli/Command"
import { Effect } from "effect"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import type { TokenView } from "./View.js"

export const list = Command.make("list", connection, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const tokens = (yield* request(cp, "GET", "/admin/bootstrap-tokens")).json as ReadonlyArray<TokenView>
    yield* Output.either(
      cp.json,
      tokens,
      Output.table(
        ["ID", "ROLE", "STATE", "USED", "EXPIRES", "DESCRIPTION"],
        tokens.map((t) => [
          t.id,
          t.role,
          t.state,
          `${t.usages_count}/${t.max_usages}`,
          t.expires_at,
          Output.orDash(t.description),
        ]),
      ),
    )
  }),
).pipe(Command.withDescription("List bootstrap tokens with their state and usage (never their secrets)."))

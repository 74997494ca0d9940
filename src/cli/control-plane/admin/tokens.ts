/** `mesh-control-plane admin tokens`: bootstrap tokens, through the admin API. */
import * as Command from "@effect/cli/Command"
import { list } from "./tokens/list.js"
import { mint } from "./tokens/mint.js"
import { revoke } from "./tokens/revoke.js"

export const tokens = Command.make("tokens").pipe(
  Command.withDescription("Bootstrap tokens through the admin API: mint one, list them, revoke one."),
  Command.withSubcommands([mint, list, revoke]),
)

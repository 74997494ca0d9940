/** `mesh-control-plane admin nodes`: enrolled nodes, through the admin API. */
import * as Command from "@effect/cli/Command"
import { ban } from "./nodes/ban.js"
import { list } from "./nodes/list.js"
import { unban } from "./nodes/unban.js"

export const nodes = Command.make("nodes").pipe(
  Command.withDescription(
    "Enrolled nodes through the admin API: list them, ban or unban one (announced to the mesh at once).",
  ),
  Command.withSubcommands([list, ban, unban]),
)

/** `mesh-control-plane admin`: operator commands that act on the database directly. */
import { Command } from "@effect/cli"
import { ban } from "./admin/ban.js"
import { unban } from "./admin/unban.js"

export const admin = Command.make("admin").pipe(
  Command.withDescription("Operator commands that act on the database directly."),
  Command.withSubcommands([ban, unban]),
)

/** `mesh-control-plane admin unban --peer <peer_id>`: lifts a ban directly in the database. */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { database } from "../flags.js"
import { peer } from "./ban.js"

export const unban = Command.make("unban", { peer, ...database }, () =>
  Effect.fail(new Error("bans are not implemented yet")),
).pipe(Command.withDescription("Lift the ban of a node, and of the identity behind it."))

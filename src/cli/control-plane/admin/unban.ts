/** `mesh-control-plane admin unban --peer <peer_id>`: lifts a ban directly in the database. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { Bans } from "../../../services/nodes/Bans.js"
import { CLI } from "../../../services/operations/Audit.js"
import { database, resolveDatabase } from "../flags.js"
import { ANNOUNCED, peer } from "./ban.js"
import { bansLayer } from "./database.js"

export const unban = Command.make("unban", { peer, ...database }, (flags) =>
  Effect.gen(function* () {
    const config = yield* resolveDatabase(flags)
    const outcome = yield* Effect.flatMap(Bans, (bans) => bans.unban(flags.peer, CLI)).pipe(
      Effect.provide(bansLayer(config)),
    )
    yield* Console.log(
      outcome.changed
        ? `unbanned ${outcome.peerId}${outcome.identityKey === undefined ? "" : ` and identity ${outcome.identityKey}`}`
        : `${outcome.peerId} was not banned`,
    )
    yield* Console.log(ANNOUNCED)
  }),
).pipe(Command.withDescription("Lift the ban of a node, and of the identity behind it."))

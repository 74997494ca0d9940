/** `mesh-control-plane admin ban --peer <peer_id>`: bans a node (and its OIDC identity) directly in the database. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Console, Effect } from "effect"
import { Bans } from "../../../services/nodes/Bans.js"
import { CLI } from "../../../services/operations/Audit.js"
import { database, resolveDatabase } from "../flags.js"
import { bansLayer } from "./database.js"

/** What happens next, said after a ban or unban written to the database. */
export const ANNOUNCED =
  "a control plane running on this database announces it to routers and nodes within seconds; with none running, they learn it from /info when they next sync"

export const peer = Options.text("peer").pipe(
  Options.withPseudoName("peer-id"),
  Options.withDescription("Peer ID of the node (12D3KooW...)."),
)

export const ban = Command.make("ban", { peer, ...database }, (flags) =>
  Effect.gen(function* () {
    const config = yield* resolveDatabase(flags)
    const outcome = yield* Effect.flatMap(Bans, (bans) => bans.ban(flags.peer, CLI)).pipe(
      Effect.provide(bansLayer(config)),
    )
    yield* Console.log(
      outcome.changed
        ? `banned ${outcome.peerId}${outcome.identityKey === undefined ? "" : ` and identity ${outcome.identityKey}`}`
        : `${outcome.peerId} was already banned`,
    )
    yield* Console.log(ANNOUNCED)
  }),
).pipe(
  Command.withDescription(
    "Ban a node directly in the database, for when the control plane's API is not reachable; a control plane running on the database announces it to the mesh.",
  ),
)

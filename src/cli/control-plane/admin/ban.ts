/** `mesh-control-plane admin ban --peer <peer_id>`: bans a node directly in the database. */
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { database } from "../flags.js"

export const peer = Options.text("peer").pipe(Options.withDescription("Peer ID of the node (12D3KooW...)."))

export const ban = Command.make("ban", { peer, ...database }, () =>
  Effect.fail(new Error("bans are not implemented yet")),
).pipe(Command.withDescription("Ban a node directly in the database; running routers learn it from /info."))

/**
 * identify on a connection whose peer was just admitted, tried again while the connection stays open. kad-dht and
 * gossipsub learn a peer's protocols only from identify, and libp2p runs it once: a lost one (its stream timing out
 * while 24 members start on two cores) left a router link up for good with no DHT and no gossip over it, so that
 * member's searches found nothing and mesh events did not reach it. A link that gossip runs over and that still has
 * no identify after the retries is closed, so that it is made again (members redial their routers).
 */
import type { Connection } from "@libp2p/interface"
import { Duration, Effect, Schedule } from "effect"
import { describe } from "../platform/Describe.js"
import { close } from "./Handshake.js"

/** 0.5, 1, 2 and 4 s apart: past a start's load, and well inside the time a member takes to redial a router. */
export const RETRIES = Schedule.exponential(Duration.millis(500)).pipe(Schedule.intersect(Schedule.recurs(4)))

export const afterAdmission = (
  identify: (connection: Connection) => Promise<unknown>,
  connection: Connection,
  /** Gossip and the DHT run over this link (a router's links): without identify it is closed, to be made again. */
  essential: boolean,
): Effect.Effect<void> =>
  Effect.tryPromise({ try: () => identify(connection), catch: describe }).pipe(
    Effect.retry({ schedule: RETRIES, while: () => connection.status === "open" }),
    Effect.catchAll((reason) => {
      if (connection.status !== "open") return Effect.void
      const logged = { peer: connection.remotePeer.toString(), reason }
      return essential
        ? Effect.logWarning("identify failed on a router link; closing it to be made again").pipe(
            Effect.annotateLogs(logged),
            Effect.zipRight(close(connection)),
          )
        : Effect.logDebug("identify failed").pipe(Effect.annotateLogs(logged))
    }),
    Effect.asVoid,
  )

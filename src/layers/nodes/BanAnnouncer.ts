/**
 * Announces to the mesh the bans and unbans this process did not make: those written by the admin command (or by
 * another replica) straight into the database. Whenever the ChangeFeed moves (postgres NOTIFY, sqlite's data_version
 * poll, our own writes), the banned peers and their ban versions are compared with the last ones seen, and each
 * difference is published as a signed event. Events this process already published (the API's bans) are not sent
 * twice: MeshEvents drops an event no newer than the last about its subject.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Ref } from "effect"
import { type MeshEvent, MeshEvents } from "../../services/events/MeshEvents.js"
import { ChangeFeed } from "../../services/operations/ChangeFeed.js"
import { toBool } from "../sql/Columns.js"

type Versions = ReadonlyMap<string, number>

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const events = yield* MeshEvents
    const feed = yield* ChangeFeed

    // The index on `banned` keeps this to the banned nodes; a ban lifted since is found by peer id below.
    const bannedNow = sql<{ peer_id: string; ban_version: number }>`
      SELECT peer_id, ban_version FROM nodes WHERE banned = ${toBool(true)}`.pipe(
      Effect.map((rows): Versions => new Map(rows.map((r) => [r.peer_id, Number(r.ban_version)]))),
    )
    const stateOf = (peerIds: ReadonlyArray<string>) =>
      peerIds.length === 0
        ? Effect.succeed([])
        : sql<{ peer_id: string; banned: unknown; ban_version: number }>`
            SELECT peer_id, banned, ban_version FROM nodes WHERE ${sql.in("peer_id", peerIds)}`

    const known = yield* Ref.make<Versions>(yield* Effect.orDie(bannedNow))

    /** Publishes what changed since the last look, and remembers the banned set as it is now. */
    const announce = Effect.gen(function* () {
      const before = yield* Ref.get(known)
      const now = yield* bannedNow
      const found: Array<MeshEvent> = []
      for (const [peerId, version] of now) {
        if (version > (before.get(peerId) ?? 0)) found.push({ type: "banned", peerId, sequence: version })
      }
      const lifted = [...before.keys()].filter((peerId) => !now.has(peerId))
      for (const row of yield* stateOf(lifted)) {
        if (!(row.banned === true || row.banned === 1)) {
          found.push({ type: "unbanned", peerId: row.peer_id, sequence: Number(row.ban_version) })
        }
      }
      yield* Ref.set(known, now)
      for (const event of found) yield* events.publish(event)
    })

    const loop = Effect.gen(function* () {
      const version = yield* feed.version
      yield* announce.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not read bans to announce; will retry", cause)),
      )
      yield* feed.changedSince(version)
    }).pipe(Effect.forever)
    yield* Effect.forkScoped(loop)
  }),
)

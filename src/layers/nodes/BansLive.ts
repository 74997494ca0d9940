/** Bans over SQL: the node flag and the identity ban change in one transaction. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Layer } from "effect"
import { NotFound } from "../../domain/Errors.js"
import { MeshEvents } from "../../services/events/MeshEvents.js"
import { type BanOutcome, Bans } from "../../services/nodes/Bans.js"
import { type Actor, Audit } from "../../services/operations/Audit.js"
import { ChangeFeed } from "../../services/operations/ChangeFeed.js"
import { toBool } from "../sql/Columns.js"

export const layer = Layer.effect(
  Bans,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const audit = yield* Audit
    const events = yield* MeshEvents
    const feed = yield* ChangeFeed

    const setBanned = (peerId: string, banned: boolean, actor: Actor) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ identity_key: string | null; banned: unknown }>`
          SELECT identity_key, banned FROM nodes WHERE peer_id = ${peerId}`
        const node = rows[0]
        if (node === undefined) return yield* new NotFound({ message: "no such node" })
        const wasBanned = node.banned === true || node.banned === 1
        // Every ban and unban raises the version, which orders the mesh events announcing them.
        const [version] = yield* sql<{ ban_version: number }>`UPDATE nodes
          SET banned = ${toBool(banned)}, banned_at = ${banned ? now : null}, ban_version = ban_version + 1
          WHERE peer_id = ${peerId} RETURNING ban_version`
        const identityKey = node.identity_key ?? undefined
        if (identityKey !== undefined) {
          yield* banned
            ? sql`INSERT INTO banned_identities (identity_key, banned_at) VALUES (${identityKey}, ${now})
                ON CONFLICT (identity_key) DO NOTHING`
            : sql`DELETE FROM banned_identities WHERE identity_key = ${identityKey}`
        }
        if (banned) yield* sql`DELETE FROM node_catalog WHERE peer_id = ${peerId}`
        if (wasBanned !== banned) {
          yield* audit.record({
            actor,
            action: banned ? "node.banned" : "node.unbanned",
            subject: peerId,
            details: identityKey === undefined ? {} : { identity: identityKey },
          })
        }
        yield* Effect.logInfo(banned ? "node banned" : "node unbanned").pipe(
          Effect.annotateLogs({ peer_id: peerId, identity: identityKey !== undefined }),
        )
        return { peerId, identityKey, changed: wasBanned !== banned, version: Number(version?.ban_version ?? 0) }
      }).pipe(
        sql.withTransaction,
        Effect.catchTag("SqlError", (error) => Effect.die(error)),
      )

    /** After the change committed: tell running routers and nodes. */
    const announce = ({ version, ...outcome }: BanOutcome & { readonly version: number }, banned: boolean) =>
      feed
        .publish("bans")
        .pipe(
          Effect.zipRight(
            events.publish({ type: banned ? "banned" : "unbanned", peerId: outcome.peerId, sequence: version }),
          ),
          Effect.as(outcome),
        )

    return {
      ban: (peerId, actor) =>
        setBanned(peerId, true, actor).pipe(
          Effect.flatMap((o) => announce(o, true)),
          Effect.withSpan("Bans.ban"),
        ),
      unban: (peerId, actor) =>
        setBanned(peerId, false, actor).pipe(
          Effect.flatMap((o) => announce(o, false)),
          Effect.withSpan("Bans.unban"),
        ),
      isIdentityBanned: (identityKey) =>
        sql`SELECT identity_key FROM banned_identities WHERE identity_key = ${identityKey}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie,
        ),
      bannedPeerIds: sql<{
        peer_id: string
      }>`SELECT peer_id FROM nodes WHERE banned = ${toBool(true)} ORDER BY peer_id`.pipe(
        Effect.map((rows) => rows.map((r) => r.peer_id)),
        Effect.orDie,
      ),
    }
  }),
)

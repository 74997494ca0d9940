/** Leases over SQL, admitted through Credentials, Nodes and Challenges. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { multiaddr } from "@multiformats/multiaddr"
import { Clock, Duration, Effect, Layer, Option, Schema } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"
import { isAdmitted } from "../../domain/Node.js"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { Credentials } from "../../services/identity/Credentials.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { ChangeFeed } from "../../services/operations/ChangeFeed.js"
import { type Lease, type LeaseRequest, Leases } from "../../services/routers/Leases.js"
import { JsonText } from "../sql/Columns.js"

const LeaseRow = Schema.Struct({
  peer_id: Schema.String,
  addresses_json: JsonText(Schema.Array(Schema.String)),
  connected_peers_json: JsonText(Schema.Array(Schema.String)),
  dht_size: Schema.Number,
  renewed_at: Schema.Number,
  expires_at: Schema.Number,
})

const toLease = (row: typeof LeaseRow.Type): Lease => ({
  peerId: row.peer_id,
  addresses: row.addresses_json,
  connectedPeers: row.connected_peers_json,
  dhtSize: row.dht_size,
  renewedAt: row.renewed_at,
  expiresAt: row.expires_at,
})

/** At most this many addresses and reported peers per lease: /info carries them to every client. */
const MAX_ADDRESSES = 32
const MAX_REPORTED_PEERS = 10_000

/** Every announced address must parse and end in the router's own peer id. */
const checkAddress = (address: string, peerId: string): string | undefined => {
  try {
    const parsed = multiaddr(address)
    return parsed.getComponents().at(-1)?.value === peerId && address.endsWith(`/p2p/${peerId}`)
      ? undefined
      : `address does not end in the router's own peer id: ${address}`
  } catch {
    return `invalid multiaddr: ${address.slice(0, 200)}`
  }
}

export const layer = Layer.effect(
  Leases,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ControlPlaneConfig
    const credentials = yield* Credentials
    const nodes = yield* Nodes
    const challenges = yield* Challenges
    const feed = yield* ChangeFeed
    const duration = Duration.toMillis(config.leaseDuration)

    const selectLive = SqlSchema.findAll({
      Request: Schema.Number,
      Result: LeaseRow,
      execute: (now) => sql`SELECT peer_id, addresses_json, connected_peers_json, dht_size, renewed_at, expires_at
        FROM router_leases WHERE expires_at > ${now} ORDER BY peer_id`,
    })

    const renew = Effect.fn("Leases.renew")(function* (request: LeaseRequest) {
      const { facts } = yield* credentials.verify(request.credential).pipe(Effect.mapError((r) => r.unauthorized))
      if (facts.role !== ROUTER_ROLE) return yield* new Forbidden({ message: "credential is not a router's" })
      if (request.peerId.length > 0 && request.peerId !== facts.peerId) {
        return yield* new Unauthorized({ message: "peer_id does not match the credential" })
      }
      const now = yield* Clock.currentTimeMillis
      const node = yield* nodes.find(facts.peerId)
      if (Option.isNone(node) || node.value.role !== ROUTER_ROLE) {
        return yield* new Unauthorized({ message: "router is not enrolled" })
      }
      if (node.value.banned) return yield* new Forbidden({ message: "router is banned" })
      if (!isAdmitted(node.value, now)) return yield* new Unauthorized({ message: "session expired; enroll again" })
      yield* challenges.verify({
        endpoint: "routers-lease",
        peerId: facts.peerId,
        publicKey: node.value.publicKey,
        unixMs: request.challengeUnixMs,
        signature: request.challengeSignature,
      })
      if (request.addresses.length > MAX_ADDRESSES)
        return yield* new BadRequest({ message: `at most ${MAX_ADDRESSES} addresses` })
      for (const address of request.addresses) {
        const bad = checkAddress(address, facts.peerId)
        if (bad !== undefined) return yield* new BadRequest({ message: bad })
      }
      const lease: Lease = {
        peerId: facts.peerId,
        addresses: [...request.addresses],
        connectedPeers: request.connectedPeers.slice(0, MAX_REPORTED_PEERS),
        dhtSize: Math.max(0, Math.trunc(request.dhtSize)),
        renewedAt: now,
        expiresAt: now + duration,
      }
      const row = {
        peer_id: lease.peerId,
        addresses_json: JSON.stringify(lease.addresses),
        connected_peers_json: JSON.stringify(lease.connectedPeers),
        dht_size: lease.dhtSize,
        renewed_at: lease.renewedAt,
        expires_at: lease.expiresAt,
      }
      const { peer_id: _, ...updates } = row
      yield* sql`INSERT INTO router_leases ${sql.insert(row)}
        ON CONFLICT (peer_id) DO UPDATE SET ${sql.update(updates)}`.pipe(Effect.orDie)
      yield* feed.publish("leases")
      return lease
    })

    return {
      renew,
      live: Effect.flatMap(Clock.currentTimeMillis, (now) => selectLive(now)).pipe(
        Effect.map((rows) => rows.map(toLease)),
        Effect.orDie,
      ),
    }
  }),
)

/**
 * Operator diagnostics (`/debug/*`, API token): what the node knows of the mesh and why it may not be connected.
 * They answer in every phase, the mesh unreachable included, since that is when they are needed. The output is for
 * people and not stable across releases; it never holds a credential or token.
 */

import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { peerIdFromString } from "@libp2p/peer-id"
import { Clock, Effect, Either, Option, Schema } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as Biscuit from "../../crypto/Biscuit.js"
import { BadGateway, BadRequest } from "../../domain/Errors.js"
import * as PeerKey from "../../domain/PeerKey.js"
import * as LeaseRenewal from "../../layers/router/LeaseRenewal.js"
import { Membership } from "../../services/member/Membership.js"
import { HolePunch } from "../../services/mesh/HolePunch.js"
import { MeshHost, type MeshHostService } from "../../services/mesh/MeshHost.js"
import { RouterLinks } from "../../services/mesh/RouterLinks.js"
import { LogRing } from "../../services/node/LogRing.js"
import { NodeLifecycle } from "../../services/node/NodeLifecycle.js"
import { inMember } from "../InMember.js"
import * as Route from "../Route.js"
import * as RelayReasons from "./RelayReasons.js"

const iso = (ms: number) => new Date(ms).toISOString()
const optionalIso = (ms: Option.Option<number>) => Option.getOrNull(Option.map(ms, iso))

const json = (body: unknown) => HttpServerResponse.json(body, { headers: { "cache-control": "no-store" } })

/** The phase in words, and the member's view when there is one. */
const phaseView = Effect.gen(function* () {
  const phase = yield* (yield* NodeLifecycle).phase
  switch (phase._tag) {
    case "LoginRequired":
      return { phase: "login_required", hint: "run mesh-node join with the control plane URL" }
    case "Starting":
      return { phase: "joining", step: phase.step, last_error: Option.getOrNull(phase.lastError) }
    case "Member":
      return { phase: "member", peer_id: phase.peerId }
  }
})

/** The phase, plus what `view` reads from the member's services once there is a member. */
const memberOr = <A extends object, R>(view: Effect.Effect<A, never, R>) =>
  Effect.flatMap(phaseView, (phase) =>
    phase.phase === "member"
      ? Effect.map(inMember(view).pipe(Effect.orDie), (member): object => ({ ...phase, ...member }))
      : Effect.succeed<object>(phase),
  )

const meshInfo = memberOr(
  Effect.gen(function* () {
    const host = yield* MeshHost
    const links = yield* RouterLinks
    const peers = yield* host.peers
    return {
      connected: yield* links.connected,
      routers_connected: peers.filter((p) => p.role === "mesh:role:router").length,
      connected_peers: host.libp2p.getConnections().length,
      dht_size: LeaseRenewal.dhtSize(host),
      authenticated_peers: peers.map((p) => ({
        peer_id: p.peerId,
        role: p.role,
        labels: p.labels,
        expires_at: iso(p.expiresAtMs),
        verified_at: iso(p.verifiedAtMs),
      })),
    }
  }),
)

const connectivity = memberOr(
  Effect.gen(function* () {
    const links = yield* RouterLinks
    const host = yield* MeshHost
    const punch = yield* HolePunch
    const request = yield* HttpServerRequest.HttpServerRequest
    const asked = new URL(request.url, "http://local").searchParams.get("peer")
    const peer =
      asked === null
        ? {}
        : {
            peer: yield* Either.match(PeerKey.canonicalPeerId(asked), {
              onLeft: () => Effect.succeed({ peer_id: asked.slice(0, 80), error: "not a peer id" }),
              onRight: (id) =>
                Effect.gen(function* () {
                  const known = yield* host.peer(id)
                  const record = yield* punch.record(id)
                  const open = host.libp2p.getConnections().filter((c) => c.remotePeer.toString() === id)
                  const remotes = open.map((c) => c.remoteAddr.toString())
                  const relayedThrough = remotes.map(RelayReasons.relayOf).filter((router) => router.length > 0)
                  const why = RelayReasons.whyRelayed(
                    yield* directAddressesOf(host, id),
                    yield* host.lastDirectFailure(id),
                  )
                  return {
                    peer_id: id,
                    connections: open.length,
                    // How each connection runs: straight to the peer, or through a router's relay (and why).
                    paths: remotes.map((address) => (address.includes("/p2p-circuit") ? "relayed" : "direct")),
                    relays: relayedThrough.map((router): RelayReasons.RelayedPath => ({ router, ...why })),
                    authenticated: Option.isSome(known),
                    // The last attempt to make the path direct, and why it failed if it did.
                    hole_punch: Option.getOrNull(
                      Option.map(record, (r) => ({
                        result: r.result,
                        how: r.how ?? null,
                        reason: r.reason ?? null,
                        failures: r.failures,
                        at: iso(r.atMs),
                      })),
                    ),
                  }
                }),
            }),
          }
    const routers = yield* links.links
    return {
      connected: yield* links.connected,
      // Slots held now (the circuit addresses this node announces), against the number it is configured for.
      relay_slots: { held: routers.filter((l) => l.relayed).length, wanted: links.relaySlots },
      // Where routers see this node from: its NAT's public address when it is behind one.
      public_addresses: yield* punch.observed,
      routers: routers.map((l) => ({
        address: l.address,
        peer_id: l.peerId,
        connected: l.connected,
        authenticated: l.connected,
        relayed: l.relayed,
        relay_error: Option.getOrNull(l.relayError),
        last_error: Option.getOrNull(l.lastError),
        last_attempt_at: optionalIso(l.lastAttemptAtMs),
        connected_since: optionalIso(l.connectedSinceMs),
      })),
      ...peer,
    }
  }),
)

/** The peer's own (not relayed) addresses, as this node's peer store holds them (identify, the DHT). */
const directAddressesOf = (host: MeshHostService, peerId: string) =>
  Effect.promise(() =>
    host.libp2p.peerStore.get(peerIdFromString(peerId)).then(
      (record) => record.addresses.map((a) => a.multiaddr.toString()).filter((a) => !a.includes("/p2p-circuit")),
      () => [] as Array<string>,
    ),
  )

const networkInfo = Effect.gen(function* () {
  const settings = yield* NodeConfig
  const local = {
    listen: settings.listen,
    local_api: {
      bind_addr: Option.getOrNull(Option.map(settings.bindAddress, (a) => `${a.host}:${a.port}`)),
      socket: Option.getOrNull(settings.socketPath),
      tls: Option.isSome(settings.tls),
      mtls: Option.isSome(Option.flatMap(settings.tls, (t) => t.caPath)),
      metrics_addr: Option.getOrNull(Option.map(settings.metricsAddress, (a) => `${a.host}:${a.port}`)),
    },
  }
  return yield* memberOr(
    Effect.gen(function* () {
      const host = yield* MeshHost
      const addresses = yield* host.addresses
      return {
        ...local,
        addresses: addresses.filter((a) => !a.includes("/p2p-circuit")),
        relay_addresses: addresses.filter((a) => a.includes("/p2p-circuit")),
      }
    }),
  ).pipe(Effect.map((view) => ({ ...local, ...view })))
})

const tokenInfo = memberOr(
  Effect.gen(function* () {
    const membership = yield* Membership
    const credential = yield* membership.credential
    const now = yield* Clock.currentTimeMillis
    const verified = Biscuit.verify(credential, (yield* membership.trust).keyFor, now)
    const expires = yield* membership.credentialExpiresAt
    const problem = Option.getOrNull(yield* membership.credentialProblem)
    return Either.match(verified, {
      onLeft: (failure) => ({ credential: { valid: false, reason: failure, expires_at: iso(expires), problem } }),
      onRight: ({ facts, keyId }) => ({
        credential: {
          valid: true,
          key_id: keyId,
          role: facts.role,
          labels: facts.labels,
          expires_at: iso(facts.expiresAtMs),
          expires_in_seconds: Math.max(0, Math.floor((facts.expiresAtMs - now) / 1000)),
          problem,
          ...(facts.identity === undefined
            ? {}
            : { identity: { issuer: facts.identity.issuer, subject: facts.identity.subject } }),
        },
      }),
    })
  }),
)

const LOG_LIMIT = 500

const logs = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const asked = Number(new URL(request.url, "http://local").searchParams.get("limit") ?? "200")
  const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, LOG_LIMIT) : 200
  return { lines: yield* (yield* LogRing).recent(limit) }
})

const ConnectBody = Schema.Struct({ multiaddr: Schema.String })

/** Dials a peer by multiaddr and reports what its handshake said: the quickest test of one path through the mesh. */
const connectPeer = inMember(
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* request.text.pipe(Effect.mapError(() => new BadRequest({ message: "unreadable body" })))
    const address = text.trim().startsWith("{")
      ? yield* Schema.decodeUnknown(Schema.parseJson(ConnectBody))(text).pipe(
          Effect.map((b) => b.multiaddr),
          Effect.mapError(() => new BadRequest({ message: 'body must be {"multiaddr": "..."} or a multiaddr' })),
        )
      : text.trim()
    if (!address.startsWith("/")) return yield* new BadRequest({ message: "not a multiaddr" })
    const host = yield* MeshHost
    const peer = yield* host.dial(address).pipe(Effect.mapError((error) => new BadGateway({ message: error.message })))
    return { peer_id: peer.peerId, role: peer.role, labels: peer.labels, expires_at: iso(peer.expiresAtMs) }
  }),
)

const get = <R>(path: string, label: string, view: Effect.Effect<unknown, unknown, R>) =>
  Route.make({
    methods: ["GET"],
    path,
    label,
    access: "token",
    availability: "always",
    handler: Effect.flatMap(view, json),
  })

export const routes = [
  get("/debug/mesh-info", "debug", meshInfo),
  get("/debug/connectivity", "debug", connectivity),
  get("/debug/network-info", "debug", networkInfo),
  get("/debug/token-info", "debug", tokenInfo),
  get("/debug/logs", "debug", logs),
  Route.make({
    methods: ["POST"],
    path: "/debug/connect-peer",
    label: "debug",
    access: "token",
    availability: "always",
    handler: Effect.flatMap(connectPeer, json),
  }),
]

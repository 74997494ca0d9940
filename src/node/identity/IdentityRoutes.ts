/**
 * `GET /mesh/identity` (this node's evidence) and `GET /mesh/peer/{peer-id}/evidence` (a peer's, as this node last
 * verified it during the handshake). Only over the Unix socket or verified mTLS: evidence is what a local workload
 * shows to prove where it runs, so it must come from a channel another local user cannot impersonate.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Clock, Effect, Either, Option } from "effect"
import * as Biscuit from "../../crypto/Biscuit.js"
import { BadRequest, NotFound, Unavailable } from "../../domain/Errors.js"
import * as PeerKey from "../../domain/PeerKey.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { inMember } from "../InMember.js"
import * as Route from "../Route.js"
import * as Evidence from "./Evidence.js"

const own = inMember(
  Effect.gen(function* () {
    const membership = yield* Membership
    const credential = yield* membership.credential
    const trust = yield* membership.trust
    const verified = Biscuit.verify(credential, trust.keyFor, yield* Clock.currentTimeMillis)
    if (Either.isLeft(verified)) {
      return yield* new Unavailable({ message: `identity evidence unavailable: credential ${verified.left}` })
    }
    const publicKey = trust.keyFor(verified.right.keyId)
    if (publicKey === undefined) return yield* new Unavailable({ message: "identity evidence unavailable" })
    return yield* HttpServerResponse.json(
      Evidence.make({ credential, facts: verified.right.facts, keyId: verified.right.keyId, publicKey }),
      { headers: { "cache-control": "no-store" } },
    )
  }),
)

const peer = inMember(
  Effect.gen(function* () {
    const { params } = yield* Route.RouteMatch
    const peerId = yield* Either.match(PeerKey.canonicalPeerId(params.peer ?? ""), {
      onLeft: () => Effect.fail(new BadRequest({ message: "not a peer id" })),
      onRight: Effect.succeed,
    })
    const host = yield* MeshHost
    const membership = yield* Membership
    const known = yield* host.peer(peerId)
    if (Option.isNone(known)) {
      return yield* new NotFound({ message: "this node has not authenticated that peer" })
    }
    const publicKey = (yield* membership.trust).keyFor(known.value.keyId)
    if (publicKey === undefined) {
      return yield* new NotFound({ message: "the key that verified that peer is no longer trusted" })
    }
    const p = known.value
    return yield* HttpServerResponse.json(
      Evidence.make({
        credential: p.credential,
        facts: { peerId: p.peerId, role: p.role, labels: p.labels, expiresAtMs: p.expiresAtMs },
        keyId: p.keyId,
        publicKey,
        verifiedAtMs: p.verifiedAtMs,
      }),
      { headers: { "cache-control": "no-store" } },
    )
  }),
)

export const routes = [
  Route.make({
    methods: ["GET"],
    path: "/mesh/identity",
    label: "identity",
    access: "strong",
    availability: "connected",
    handler: own,
  }),
  Route.make({
    methods: ["GET"],
    path: "/mesh/peer/:peer/evidence",
    label: "peer-evidence",
    access: "strong",
    availability: "connected",
    handler: peer,
  }),
]

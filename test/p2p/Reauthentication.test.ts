/**
 * Re-authentication on an open connection: a member's refreshed credential reaches the peers it is connected to
 * without a new connection, and a peer whose recorded credential expired is asked for its current one before it is
 * refused. Before, a connection kept the credential of its handshake until it expired, and then it was dropped.
 */
import { describe, expect, it } from "@effect/vitest"
import { peerIdFromString } from "@libp2p/peer-id"
import { Clock, Effect, Option, PubSub, Ref, Stream } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as MeshHostLive from "../../src/layers/mesh/MeshHostLive.js"
import { makeTrust, NODE_ROLE, signer, startPeer, waitUntil } from "./fixtures.js"

/** A node whose credential the test replaces, announcing the change or not. */
const changingNode = (trust: ReturnType<typeof makeTrust>, firstExpiresAtMs: number) =>
  Effect.gen(function* () {
    const key = PeerKey.generate()
    const mintUntil = (expiresAtMs: number) =>
      Biscuit.mint({ peerId: key.peerId, role: NODE_ROLE, labels: {}, expiresAtMs }, signer)
    const credential = yield* Ref.make(mintUntil(firstExpiresAtMs))
    const changes = yield* PubSub.unbounded<void>()
    const host = yield* MeshHostLive.make({
      seed: key.seed,
      credential: Ref.get(credential),
      credentialChanges: Stream.fromPubSub(changes),
      trust: trust.trust,
      listen: ["/ip4/127.0.0.1/tcp/0"],
      mode: "node",
    })
    return {
      host,
      peerId: key.peerId,
      /** Holds a new credential; `announce` tells the host, as a member does after a refresh. */
      replace: (expiresAtMs: number, announce: boolean) =>
        Effect.zipRight(
          Ref.set(credential, mintUntil(expiresAtMs)),
          announce ? PubSub.publish(changes, undefined) : Effect.void,
        ),
    }
  })

const wholeSeconds = (ms: number) => Math.floor(ms / 1000) * 1000

describe("MeshHost re-authentication", () => {
  it.scopedLive(
    "a refreshed credential reaches the connected peer over the connection it already has",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const now = yield* Clock.currentTimeMillis
        const node = yield* changingNode(trust, wholeSeconds(now + 600_000))
        yield* node.host.dial(router.address)
        const connections = router.libp2p.getConnections(peerIdFromString(node.peerId)).map((c) => c.id)

        const later = wholeSeconds(now + 7_200_000)
        yield* node.replace(later, true)
        yield* waitUntil("the router records the new credential", () =>
          Effect.runSync(router.peer(node.peerId)).pipe(Option.exists((p) => p.expiresAtMs === later)),
        )
        expect(router.libp2p.getConnections(peerIdFromString(node.peerId)).map((c) => c.id)).toEqual(connections)
      }),
    60_000,
  )

  it.scopedLive(
    "a peer whose recorded credential expired is asked for its current one, and kept",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const now = yield* Clock.currentTimeMillis
        const soon = wholeSeconds(now + 2_000)
        const node = yield* changingNode(trust, soon)
        yield* node.host.dial(router.address)
        // A refresh whose re-authentication never reached the router.
        const later = wholeSeconds(now + 7_200_000)
        yield* node.replace(later, false)
        yield* waitUntil("the recorded credential expires", () => Date.now() > soon + 1, 10_000)

        const seen = yield* router.peer(node.peerId)
        expect(Option.map(seen, (p) => p.expiresAtMs)).toEqual(Option.some(later))
        yield* router.reverify
        expect((yield* router.peers).map((p) => p.peerId)).toEqual([node.peerId])
      }),
    60_000,
  )
})

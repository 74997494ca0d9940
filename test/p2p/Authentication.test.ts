import { describe, expect, it } from "@effect/vitest"
import { peerIdFromString } from "@libp2p/peer-id"
import { Effect, Option } from "effect"
import { makeTrust, NODE_ROLE, ROUTER_ROLE, startPeer, waitUntil } from "./fixtures.js"

describe("MeshHost authentication", () => {
  it.scopedLive(
    "a router and two nodes authenticate each other and see each other's role and labels",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust, labels: { region: "eu-west" } })
        const a = yield* startPeer({ mode: "node", trust, labels: { team: "alpha" } })
        const b = yield* startPeer({ mode: "node", trust, labels: { team: "beta", gpu: "a100" } })

        expect(router.address).toMatch(new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${router.peerId}$`))
        const seenByA = yield* a.dial(router.address, { requireRole: ROUTER_ROLE })
        const seenByB = yield* b.dial(router.address, { requireRole: ROUTER_ROLE })
        for (const seen of [seenByA, seenByB]) {
          expect(seen).toMatchObject({
            peerId: router.peerId,
            role: ROUTER_ROLE,
            labels: { region: "eu-west" },
            keyId: 1,
          })
        }

        const routerPeers = yield* router.peers
        expect(routerPeers.map((p) => p.peerId).sort()).toEqual([a.peerId, b.peerId].sort())
        expect(Option.getOrThrow(yield* router.peer(a.peerId))).toMatchObject({
          role: NODE_ROLE,
          labels: { team: "alpha" },
        })
        expect(Option.getOrThrow(yield* router.peer(b.peerId))).toMatchObject({
          role: NODE_ROLE,
          labels: { team: "beta", gpu: "a100" },
        })
        for (const node of [a, b]) {
          const peers = yield* node.peers
          expect(peers.map((p) => [p.peerId, p.role])).toEqual([[router.peerId, ROUTER_ROLE]])
        }
      }),
    60_000,
  )

  it.scopedLive(
    "dial fails when the peer lacks the required role, without dropping it",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const a = yield* startPeer({ mode: "node", trust })
        const b = yield* startPeer({ mode: "node", trust })
        const error = yield* Effect.flip(b.dial(a.address, { requireRole: ROUTER_ROLE }))
        expect(error._tag).toBe("MeshDialError")
        expect(error.reason).toBe(`peer has role ${NODE_ROLE}, not ${ROUTER_ROLE}`)
        expect(Option.isSome(yield* b.peer(a.peerId))).toBe(true)
      }),
    60_000,
  )

  it.scopedLive(
    "a banned peer is disconnected at once and refused when it dials again",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const node = yield* startPeer({ mode: "node", trust })
        yield* node.dial(router.address)

        trust.banned.add(node.peerId)
        yield* router.disconnect(node.peerId)
        const nodeId = peerIdFromString(node.peerId)
        yield* waitUntil(
          "router closed the node's connections",
          () => router.libp2p.getConnections(nodeId).length === 0,
          30_000,
        )
        expect(yield* router.peers).toEqual([])
        yield* waitUntil("node saw its connection close", () => node.libp2p.getConnections().length === 0, 30_000)
        expect(yield* node.peers).toEqual([])

        const redial = yield* Effect.flip(node.dial(router.address))
        expect(redial._tag).toBe("MeshDialError")
        expect(router.libp2p.getConnections(nodeId)).toEqual([])
        expect(yield* router.peers).toEqual([])
      }),
    60_000,
  )

  it.scopedLive(
    "reverify keeps a peer whose key is still live and drops it once the key is retired",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const node = yield* startPeer({ mode: "node", trust })
        yield* node.dial(router.address)
        const before = Option.getOrThrow(yield* router.peer(node.peerId))

        // Grace period: the key was rotated out but is still live, so the credential still verifies. Once the clock
        // has moved past the first verification, a new one shows as a later time.
        yield* waitUntil("the clock moved on", () => Date.now() > before.verifiedAtMs)
        yield* router.reverify
        const after = Option.getOrThrow(yield* router.peer(node.peerId))
        expect(after.verifiedAtMs).toBeGreaterThan(before.verifiedAtMs)

        trust.keys.clear()
        yield* router.reverify
        expect(yield* router.peers).toEqual([])
        const nodeId = peerIdFromString(node.peerId)
        yield* waitUntil(
          "router closed the node's connections",
          () => router.libp2p.getConnections(nodeId).length === 0,
          30_000,
        )
      }),
    60_000,
  )
})

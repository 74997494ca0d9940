import { noise } from "@chainsafe/libp2p-noise"
import { describe, expect, it } from "@effect/vitest"
import { gossipsub } from "@libp2p/gossipsub"
import { identify } from "@libp2p/identify"
import { kadDHT, passthroughMapper } from "@libp2p/kad-dht"
import { peerIdFromString } from "@libp2p/peer-id"
import { ping } from "@libp2p/ping"
import { tcp } from "@libp2p/tcp"
import { yamux } from "@libp2p/yamux"
import { multiaddr } from "@multiformats/multiaddr"
import { Effect, Ref, Stream } from "effect"
import * as lp from "it-length-prefixed"
import { createLibp2p, type Libp2p } from "libp2p"
import { DHT_PROTOCOL } from "../../src/p2p/Libp2pHost.js"
import { findNode, makeTrust, startPeer, waitUntil } from "./fixtures.js"

const TOPIC = "/mesh/test/v1"
const LATE = "/mesh/test/late/1.0.0"
const text = (data: Uint8Array) => Buffer.from(data).toString("utf8")

/** A libp2p peer that speaks gossipsub and the mesh DHT but never runs the mesh handshake. */
const startBarePeer = Effect.acquireRelease(
  Effect.promise(() =>
    createLibp2p({
      addresses: { listen: ["/ip4/127.0.0.1/tcp/0"] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      services: {
        identify: identify(),
        ping: ping(),
        pubsub: gossipsub({ allowPublishToZeroTopicPeers: true }),
        dht: kadDHT({ protocol: DHT_PROTOCOL, clientMode: true, peerInfoMapper: passthroughMapper }),
      },
    }),
  ),
  (node) => Effect.promise(async () => node.stop()),
)

describe("MeshHost gossip", () => {
  it.scopedLive(
    "messages from authenticated nodes cross the router; a peer that never authenticates gets no identify, DHT or late-registered protocol answer, its messages go nowhere, and it is cut off after 10 s",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const a = yield* startPeer({ mode: "node", trust })
        const b = yield* startPeer({ mode: "node", trust })
        yield* a.dial(router.address)
        yield* b.dial(router.address)

        const received = yield* Ref.make<ReadonlyArray<{ readonly from: string; readonly data: string }>>([])
        yield* Stream.runForEach(b.subscribe(TOPIC), (m) =>
          Ref.update(received, (all) => [...all, { from: m.from, data: text(m.data) }]),
        ).pipe(Effect.forkScoped)
        const sawFromA = (data: string) =>
          Effect.map(Ref.get(received), (all) => all.some((m) => m.from === a.peerId && m.data === data))
        /** Publishes until B has the message: the router joins the topic once it hears of B's subscription. */
        const deliver = (data: string) =>
          Effect.gen(function* () {
            for (let i = 0; i < 50; i++) {
              yield* a.publish(TOPIC, Buffer.from(data))
              for (let j = 0; j < 4; j++) {
                if (yield* sawFromA(data)) return
                yield* Effect.sleep("50 millis")
              }
            }
            return yield* Effect.dieMessage(`message ${data} never reached b`)
          })

        yield* deliver("hello")
        expect(router.libp2p.services.pubsub.getTopics()).toContain(TOPIC)
        // A protocol registered after start is guarded like the DHT's.
        yield* Effect.promise(() =>
          router.libp2p.handle(LATE, async (stream) => {
            for await (const chunk of stream) stream.send(chunk)
            await stream.close()
          }),
        )

        // A peer without the handshake connects to the router, joins the topic and publishes while the router still
        // waits for its credential; it also asks the router's DHT.
        const bare = yield* startBarePeer
        const bareId = bare.peerId
        yield* Effect.promise(() => bare.dial(multiaddr(router.address)))
        yield* waitUntil("router saw the connection", () => router.libp2p.getConnections(bareId).length > 0)
        const first = router.libp2p.getConnections(bareId).map((c) => c.id)
        bare.services.pubsub.subscribe(TOPIC)
        /** One request from `from` on a protocol of the router, and its answer if any. */
        const ask = (from: Libp2p, protocol: string, request: Uint8Array) =>
          Effect.promise(async () => {
            try {
              const stream = await from.dialProtocol(multiaddr(router.address), protocol)
              stream.send(lp.encode.single(request))
              await stream.close()
              for await (const frame of lp.decode(stream)) return frame.subarray()
            } catch {
              return undefined
            }
            return undefined
          })
        // A well-formed question about a peer the router knows: an authenticated node gets the answer (so a silence
        // below is the guard's, not a request the router could not parse), and so does the late protocol.
        const question = findNode(a.peerId)
        const answered = yield* ask(b.libp2p, DHT_PROTOCOL, question)
        expect(
          answered !== undefined &&
            Buffer.from(answered).includes(Buffer.from(peerIdFromString(a.peerId).toMultihash().bytes)),
        ).toBe(true)
        expect(text((yield* ask(b.libp2p, LATE, Buffer.from("hello?"))) ?? new Uint8Array(0))).toContain("hello?")
        const dhtAnswer = yield* ask(bare, DHT_PROTOCOL, question).pipe(Effect.fork)
        const lateAnswer = yield* ask(bare, LATE, Buffer.from("hello?")).pipe(Effect.fork)
        for (let i = 0; i < 10; i++) {
          yield* Effect.promise(() => bare.services.pubsub.publish(TOPIC, Buffer.from(`intruder-${i}`)))
          yield* Effect.sleep("200 millis")
        }
        // The router closes a connection that has not authenticated within 10 s (libp2p on the other side redials,
        // and each new connection gets the same 10 s).
        yield* waitUntil(
          "router closed the unauthenticated connection",
          () => !router.libp2p.getConnections(bareId).some((c) => first.includes(c.id)),
          30_000,
        )
        expect(yield* dhtAnswer.await.pipe(Effect.flatten)).toBeUndefined()
        expect(yield* lateAnswer.await.pipe(Effect.flatten)).toBeUndefined()
        // Identify is for authenticated peers too: the peer never learned what the router runs.
        const routerRecord = yield* Effect.promise(() => bare.peerStore.get(router.libp2p.peerId))
        expect(routerRecord.metadata.has("AgentVersion")).toBe(false)
        expect((yield* router.peers).map((p) => p.peerId)).not.toContain(bareId.toString())

        yield* deliver("after")
        const all = yield* Ref.get(received)
        expect(all.filter((m) => m.data.startsWith("intruder"))).toEqual([])
        expect(new Set(all.map((m) => m.from))).toEqual(new Set([a.peerId]))
        expect(peerIdFromString(a.peerId).equals(bareId)).toBe(false)
      }),
    60_000,
  )
  it.scopedLive(
    "a router peers explicitly with every member and forwards every message to each subscriber, however many share an address",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const publisher = yield* startPeer({ mode: "node", trust })
        yield* publisher.dial(router.address)
        // More subscribers than gossipsub's Dhi (12), all on one address, each linked to the router alone (nodes at rest).
        const subscribers = yield* Effect.forEach(Array.from({ length: 16 }), () =>
          Effect.tap(startPeer({ mode: "node", trust }), (peer) => peer.dial(router.address)),
        )
        const heard = yield* Ref.make<ReadonlySet<string>>(new Set())
        yield* Effect.forEach(subscribers, (peer) =>
          Stream.runForEach(peer.subscribe(TOPIC), () =>
            Ref.update(heard, (all) => new Set([...all, peer.peerId])),
          ).pipe(Effect.forkScoped),
        )
        // Explicit peering both ways on every router link (gossipsub's `direct`, not in its public interface).
        const direct = (peer: { libp2p: { services: { pubsub: unknown } } }) =>
          (peer.libp2p.services.pubsub as { direct: Set<string> }).direct
        yield* waitUntil("the router peers explicitly with every member, and every member with the router", () =>
          subscribers.every((peer) => direct(router).has(peer.peerId) && direct(peer).has(router.peerId)),
        )
        yield* waitUntil("the router knows every subscription", () =>
          subscribers.every((peer) =>
            router.libp2p.services.pubsub.getSubscribers(TOPIC).some((id) => id.toString() === peer.peerId),
          ),
        )
        yield* publisher.publish(TOPIC, Buffer.from("ban"))
        yield* waitUntil("every subscriber heard the message", async () => {
          const all = await Effect.runPromise(Ref.get(heard))
          return subscribers.every((peer) => all.has(peer.peerId))
        })
        // A member that went away is no longer a direct peer: gossipsub would keep dialing it.
        const gone = subscribers[0] as (typeof subscribers)[number]
        yield* router.disconnect(gone.peerId)
        yield* waitUntil("the router stops peering with a member it dropped", () => !direct(router).has(gone.peerId))
      }),
    60_000,
  )
  it.scopedLive("members carry no gossip between themselves: a member's copy would shadow its router's", () =>
    Effect.gen(function* () {
      const trust = makeTrust()
      const router = yield* startPeer({ mode: "router", trust })
      const [x, v] = yield* Effect.all([startPeer({ mode: "node", trust }), startPeer({ mode: "node", trust })])
      yield* x.dial(router.address)
      yield* v.dial(router.address)
      yield* x.dial(v.address)
      type Streams = { streamsOutbound: Map<string, unknown>; streamsInbound: Map<string, unknown> }
      const streams = (peer: typeof x) => peer.libp2p.services.pubsub as unknown as Streams
      // Gossip with the router is up both ways, and X has identified V (it knows V speaks gossipsub).
      yield* waitUntil("gossip streams with the router", () =>
        [x, v].every((peer) => streams(peer).streamsOutbound.has(router.peerId)),
      )
      yield* waitUntil("X identified V", async () => {
        const known = await x.libp2p.peerStore.get(v.libp2p.peerId)
        return known.protocols.some((protocol) => protocol.startsWith("/meshsub/"))
      })
      // Give gossipsub the moment it takes to open a stream to a newly identified peer.
      yield* Effect.sleep("1 second")
      // Each side may try; the other refuses the stream, so neither ever reads gossip from the other.
      expect(streams(x).streamsInbound.has(v.peerId)).toBe(false)
      expect(streams(v).streamsInbound.has(x.peerId)).toBe(false)
      expect(streams(x).streamsInbound.has(router.peerId)).toBe(true)
    }),
  )
})

import { describe, expect, it } from "@effect/vitest"
import type { Stream } from "@libp2p/interface"
import { peerIdFromString } from "@libp2p/peer-id"
import { multiaddr } from "@multiformats/multiaddr"
import { Clock, Effect, Option } from "effect"
import * as lp from "it-length-prefixed"
import { DHT_PROTOCOL } from "../../src/p2p/Libp2pHost.js"
import { type CredentialKind, findNode, makeTrust, startPeer, type TestPeer, waitUntil } from "./fixtures.js"

const ECHO = "/mesh/test/echo/1.0.0"

/** Sends one length-prefixed request and reads one answer; undefined when the stream ends or is cut first. */
const exchange = async (stream: Stream, request: Uint8Array): Promise<Uint8Array | undefined> => {
  stream.send(lp.encode.single(request))
  await stream.close()
  try {
    for await (const frame of lp.decode(stream)) return frame.subarray()
  } catch {
    return undefined
  }
  return undefined
}

/** Asks the router directly, over the DHT protocol, where `target` is. */
const askRouter = (from: TestPeer, router: TestPeer, target: string) =>
  Effect.promise(async () => {
    try {
      const stream = await from.libp2p.dialProtocol(multiaddr(router.address), DHT_PROTOCOL, {
        signal: AbortSignal.timeout(15_000),
      })
      return await exchange(stream, findNode(target))
    } catch {
      return undefined
    }
  })

const echo = (peer: TestPeer, address: string, payload: Uint8Array) =>
  Effect.promise(async () => {
    const stream = await peer.libp2p.dialProtocol(multiaddr(address), ECHO, {
      runOnLimitedConnection: true,
      signal: AbortSignal.timeout(10_000),
    })
    stream.send(payload)
    await stream.close()
    const chunks: Array<Uint8Array> = []
    for await (const chunk of stream) chunks.push(chunk.subarray())
    return Buffer.concat(chunks)
  })

describe("MeshHost gating", () => {
  it.scopedLive(
    "an authenticated node reserves a relay slot, answers through it, and is found through the router's DHT",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const router = yield* startPeer({ mode: "router", trust })
        const hidden = yield* startPeer({ mode: "node", trust })
        const caller = yield* startPeer({ mode: "node", trust })
        // Registered after start: the guard must still wrap it.
        yield* Effect.promise(() =>
          hidden.libp2p.handle(
            ECHO,
            async (stream) => {
              for await (const chunk of stream) stream.send(chunk)
              await stream.close()
            },
            { runOnLimitedConnection: true },
          ),
        )

        yield* hidden.listen(`${router.address}/p2p-circuit`)
        expect(router.libp2p.services.relay?.reservations.has(peerIdFromString(hidden.peerId))).toBe(true)
        const circuit = `${router.address}/p2p-circuit/p2p/${hidden.peerId}`
        expect(yield* hidden.addresses).toContain(circuit)

        // The router's DHT answers an authenticated node, and knows where the hidden node is. (A third node asks:
        // the caller must not learn the direct address, or libp2p would dial it instead of the relayed one.)
        const seeker = yield* startPeer({ mode: "node", trust })
        const hiddenId = peerIdFromString(hidden.peerId)
        expect(yield* Effect.promise(() => seeker.libp2p.peerStore.has(hiddenId))).toBe(false)
        const answer = yield* askRouter(seeker, router, hidden.peerId)
        expect(answer !== undefined && Buffer.from(answer).includes(Buffer.from(hiddenId.toMultihash().bytes))).toBe(
          true,
        )
        const found = yield* Effect.promise(() =>
          seeker.libp2p.peerRouting.findPeer(hiddenId, { signal: AbortSignal.timeout(10_000) }),
        )
        expect(found.multiaddrs.map(String)).toContain(hidden.address.replace(`/p2p/${hidden.peerId}`, ""))

        const reached = yield* caller.dial(circuit)
        expect(reached.peerId).toBe(hidden.peerId)
        const relayed = caller.libp2p.getConnections(peerIdFromString(hidden.peerId))
        expect(relayed.length).toBe(1)
        expect(relayed[0]?.limits).toBeDefined()
        const payload = new Uint8Array(1024).map((_, i) => i % 251)
        expect(new Uint8Array(yield* echo(caller, circuit, payload))).toEqual(payload)
        expect((yield* hidden.peers).map((p) => p.peerId)).toEqual(
          expect.arrayContaining([router.peerId, caller.peerId]),
        )
      }),
    60_000,
  )

  it.scopedLive(
    "a peer whose credential expires is not an authenticated peer from that moment, before any re-check",
    () =>
      Effect.gen(function* () {
        const trust = makeTrust()
        const expiresAtMs = Math.ceil(((yield* Clock.currentTimeMillis) + 3_000) / 1000) * 1000
        const server = yield* startPeer({ mode: "node", trust })
        const caller = yield* startPeer({ mode: "node", trust, expiresAtMs })
        yield* caller.dial(server.address)
        yield* waitUntil("the caller is authenticated", async () =>
          Option.isSome(await Effect.runPromise(server.peer(caller.peerId))),
        )
        // The re-verification runs a minute after the host started; the credential expires within seconds.
        yield* waitUntil("the credential expired", () => Date.now() > expiresAtMs, 10_000)
        expect(Option.isNone(yield* server.peer(caller.peerId))).toBe(true)
      }),
  )

  const refusals: ReadonlyArray<readonly [CredentialKind, string]> = [
    ["none", "no credential"],
    ["expired", "credential has expired"],
    ["unknown-key", "credential is signed by an unknown or retired key"],
  ]
  for (const [kind, reason] of refusals) {
    it.scopedLive(
      `a peer with ${kind === "none" ? "no credential" : `an ${kind} credential`} is disconnected and gets no relay slot, relayed connection or DHT answer`,
      () =>
        Effect.gen(function* () {
          const trust = makeTrust()
          const router = yield* startPeer({ mode: "router", trust })
          const hidden = yield* startPeer({ mode: "node", trust })
          yield* hidden.listen(`${router.address}/p2p-circuit`)
          const intruder = yield* startPeer({ mode: "node", trust, credential: kind })
          const intruderId = peerIdFromString(intruder.peerId)

          const refused = yield* Effect.flip(intruder.dial(router.address))
          expect(refused.reason).toBe(`refused by peer: ${reason}`)
          yield* waitUntil(
            "router closed the intruder's connection",
            () => router.libp2p.getConnections(intruderId).length === 0,
          )
          yield* waitUntil("intruder's connection closed", () => intruder.libp2p.getConnections().length === 0)
          expect((yield* router.peers).map((p) => p.peerId)).toEqual([hidden.peerId])

          const reservation = yield* Effect.flip(intruder.listen(`${router.address}/p2p-circuit`))
          expect(reservation._tag).toBe("MeshListenError")
          expect(router.libp2p.services.relay?.reservations.has(intruderId)).toBe(false)

          expect(yield* askRouter(intruder, router, hidden.peerId)).toBeUndefined()
          const lookup = yield* Effect.promise(() =>
            intruder.libp2p.peerRouting
              .findPeer(peerIdFromString(hidden.peerId), { signal: AbortSignal.timeout(3_000) })
              .then(
                () => "found",
                () => "not found",
              ),
          )
          expect(lookup).toBe("not found")

          // Last, as the attempt teaches the intruder the hidden node's relayed address.
          const relayed = yield* Effect.flip(intruder.dial(`${router.address}/p2p-circuit/p2p/${hidden.peerId}`))
          expect(relayed._tag).toBe("MeshDialError")
          expect((yield* hidden.peers).map((p) => p.peerId)).toEqual([router.peerId])
        }),
      60_000,
    )
  }
})

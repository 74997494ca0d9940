import { describe, expect, it } from "@effect/vitest"
import type { Stream } from "@libp2p/interface"
import { Either } from "effect"
import * as lp from "it-length-prefixed"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as AuthProtocol from "../../src/p2p/AuthProtocol.js"
import { NODE_ROLE, rogue, signer } from "./fixtures.js"

/** Just enough of a stream for `readFrame`: the chunks it yields, and a record of an abort. */
const fakeStream = (chunks: ReadonlyArray<Uint8Array>) => {
  const state = { aborted: false }
  const stream = {
    async *[Symbol.asyncIterator]() {
      for (const chunk of chunks) yield chunk
    },
    abort: () => {
      state.aborted = true
    },
  }
  return { stream: stream as unknown as Stream, state }
}

const frame = (length: number) => lp.encode.single(new Uint8Array(length), { maxDataLength: 1 << 20 }).subarray()

describe("AuthProtocol", () => {
  it("reads one length-prefixed frame, across chunks, up to 64 KiB", async () => {
    const whole = frame(AuthProtocol.MAX_FRAME_BYTES)
    const { stream } = fakeStream([whole.subarray(0, 2), whole.subarray(2, 1000), whole.subarray(1000)])
    expect((await AuthProtocol.readFrame(stream)).length).toBe(AuthProtocol.MAX_FRAME_BYTES)
  })

  it("refuses a frame longer than 64 KiB before reading it, and a stream that ends early", async () => {
    await expect(AuthProtocol.readFrame(fakeStream([frame(AuthProtocol.MAX_FRAME_BYTES + 1)]).stream)).rejects.toThrow(
      "Message length too long",
    )
    await expect(AuthProtocol.readFrame(fakeStream([frame(10).subarray(0, 5)]).stream)).rejects.toThrow()
    await expect(AuthProtocol.readFrame(fakeStream([]).stream)).rejects.toThrow("stream ended before an auth frame")
  })

  it("round-trips AuthFrame and AuthResponse, and names a message that is neither", () => {
    const biscuit = Uint8Array.from([1, 2, 3])
    expect(Either.getOrThrow(AuthProtocol.decodeFrame(AuthProtocol.encodeFrame({ biscuit }))).biscuit).toEqual(biscuit)
    const answer = Either.getOrThrow(
      AuthProtocol.decodeResponse(AuthProtocol.encodeResponse({ success: false, error: "no" })),
    )
    expect([answer.success, answer.error]).toEqual([false, "no"])
    expect(AuthProtocol.decodeFrame(Uint8Array.from([0xff, 0xff]))).toEqual(
      Either.left("auth frame is not an AuthFrame"),
    )
  })

  it("accepts a live credential bound to the remote peer, and refuses each other case with a short reason", () => {
    const banned = new Set<string>()
    const keyFor = (id: number) => (id === signer.id ? signer.publicKey : undefined)
    const peer = PeerKey.generate()
    const other = PeerKey.generate()
    const now = 1_800_000_000_000
    const facts = { peerId: peer.peerId, role: NODE_ROLE, labels: { zone: "eu" }, expiresAtMs: now + 60_000 }
    const trustNow = { keyFor, isBanned: (p: string) => banned.has(p) }
    const valid = Biscuit.mint(facts, signer)

    const ok = AuthProtocol.check(valid, peer.peerId, trustNow, now)
    expect(Either.map(ok, (v) => AuthProtocol.toPeer(v, valid, now))).toEqual(
      Either.right({
        peerId: peer.peerId,
        role: NODE_ROLE,
        labels: { zone: "eu" },
        expiresAtMs: facts.expiresAtMs,
        keyId: signer.id,
        credential: valid,
        verifiedAtMs: now,
      }),
    )
    expect(AuthProtocol.check(new Uint8Array(), peer.peerId, trustNow, now)).toEqual(Either.left("no credential"))
    expect(AuthProtocol.check(valid, other.peerId, trustNow, now)).toEqual(Either.left("credential names another peer"))
    expect(AuthProtocol.check(valid, peer.peerId, trustNow, facts.expiresAtMs + 1000)).toEqual(
      Either.left("credential has expired"),
    )
    expect(AuthProtocol.check(Biscuit.mint(facts, rogue), peer.peerId, trustNow, now)).toEqual(
      Either.left("credential is signed by an unknown or retired key"),
    )
    banned.add(peer.peerId)
    expect(AuthProtocol.check(valid, peer.peerId, trustNow, now)).toEqual(Either.left("peer is banned"))
  })

  it("cuts a remote refusal short and strips control characters", () => {
    expect(AuthProtocol.remoteError("bad\nthing\u0007")).toBe("bad thing ")
    expect(AuthProtocol.remoteError("x".repeat(500))).toHaveLength(200)
    expect(AuthProtocol.remoteError("")).toBe("no reason given")
  })
})

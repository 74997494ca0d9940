import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Challenge from "../../src/domain/Challenge.js"
import * as PeerKey from "../../src/domain/PeerKey.js"

const peer = PeerKey.generate()
const now = Date.parse("2026-06-01T12:00:00Z")
const proof = (ts: number, seed = peer.seed, endpoint: Challenge.Endpoint = "refresh") => ({
  endpoint: "refresh" as const,
  peerId: peer.peerId,
  publicKey: peer.publicKey,
  unixMs: ts,
  signature: Challenge.sign(seed, endpoint, peer.peerId, ts),
  nowMs: now,
})

describe("Challenge", () => {
  it("signs and checks mesh:<endpoint>:<peer>:<ms>", () => {
    expect(new TextDecoder().decode(Challenge.payload("enroll", "12D3", 42))).toBe("mesh:enroll:12D3:42")
    expect(Challenge.check(proof(now))).toEqual(Either.void)
  })

  it("accepts up to five minutes either way, not six", () => {
    expect(Challenge.check(proof(now - 5 * 60_000))).toEqual(Either.void)
    expect(Challenge.check(proof(now + 5 * 60_000))).toEqual(Either.void)
    expect(Challenge.check(proof(now - 6 * 60_000))).toEqual(Either.left(Challenge.reasons.stale))
    expect(Challenge.check(proof(now + 6 * 60_000))).toEqual(Either.left(Challenge.reasons.stale))
  })

  it("refuses another key, another endpoint and a missing timestamp", () => {
    expect(Challenge.check(proof(now, PeerKey.generate().seed))).toEqual(Either.left(Challenge.reasons.signature))
    expect(Challenge.check(proof(now, peer.seed, "enroll"))).toEqual(Either.left(Challenge.reasons.signature))
    expect(Challenge.check({ ...proof(now), unixMs: 0 })).toEqual(Either.left(Challenge.reasons.missing))
  })

  it("peer ids must derive from the key", () => {
    const protobuf = PeerKey.toProtobuf(peer.publicKey)
    expect(Either.map(PeerKey.bind(peer.peerId, protobuf), (k) => k.peerId)).toEqual(Either.right(peer.peerId))
    expect(PeerKey.bind(PeerKey.generate().peerId, protobuf)).toEqual(
      Either.left("peer_id is not derived from public_key"),
    )
    expect(Either.isLeft(PeerKey.bind("not-a-peer", protobuf))).toBe(true)
  })
})

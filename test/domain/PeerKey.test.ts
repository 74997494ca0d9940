import { describe, expect, it } from "@effect/vitest"
import * as PeerKey from "../../src/domain/PeerKey.js"

// Peer ids of fixed Ed25519 keys (32 bytes of 1s, of 2s), so the test does not depend on a random key.
const ONE = PeerKey.peerIdOf(new Uint8Array(32).fill(1))
const TWO = PeerKey.peerIdOf(new Uint8Array(32).fill(2))

describe("peer id checks", () => {
  it("a peer id passes, the first time and from the memo after", () => {
    expect(PeerKey.isPeerId(ONE)).toBe(true)
    expect(PeerKey.isPeerId(ONE)).toBe(true)
    expect(PeerKey.isPeerId(TWO)).toBe(true)
  })

  it("text that is not a peer id fails every time: a refusal is never remembered as a pass", () => {
    for (const bad of ["", "peer", `${ONE}x`, ` ${ONE}`, ONE.slice(0, -1), "12D3KooW"]) {
      expect(PeerKey.isPeerId(bad), bad).toBe(false)
      expect(PeerKey.isPeerId(bad), bad).toBe(false)
    }
  })

  it("the memo stays bounded and still answers right once it has been cleared", () => {
    for (let i = 0; i < 600; i++) PeerKey.isPeerId(PeerKey.peerIdOf(new Uint8Array(32).fill(i % 251)))
    expect(PeerKey.isPeerId(ONE)).toBe(true)
    expect(PeerKey.isPeerId(`${TWO}x`)).toBe(false)
  })
})

import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import * as KeySet from "../../src/domain/KeySet.js"

const a = { id: 1, ...Ed25519.generate() }
const b = { id: 2, ...Ed25519.generate() }
const stranger = { id: 3, ...Ed25519.generate() }
const now = Date.parse("2026-06-01T12:00:00Z")

describe("KeySet", () => {
  it("accepts a set signed by a key the caller trusts, and learns the new key from it", () => {
    const body = KeySet.sign([a, b], now)
    const keys = Either.getOrThrow(KeySet.verify(body, [a.publicKey], now))
    expect(keys.map((k) => k.id)).toEqual([1, 2])
    expect(Buffer.from(keys[1]?.publicKey ?? []).equals(Buffer.from(b.publicKey))).toBe(true)
  })

  it("refuses a set that no trusted key is part of", () => {
    expect(KeySet.verify(KeySet.sign([stranger], now), [a.publicKey], now)).toEqual(
      Either.left("key set is not signed by a trusted key"),
    )
  })

  it("refuses a set listing a trusted key that did not sign it", () => {
    const body = KeySet.sign([stranger], now)
    // Claim the trusted key is in the set without its signature: replace the listed key.
    const forged = Buffer.from(body)
    forged.set(a.publicKey, forged.indexOf(Buffer.from(stranger.publicKey)))
    expect(KeySet.verify(forged, [a.publicKey], now)).toEqual(Either.left("key set has an invalid signature"))
  })

  it("refuses a set signed long ago or far in the future", () => {
    const body = KeySet.sign([a], now)
    expect(KeySet.verify(body, [a.publicKey], now + 6 * 60_000)).toEqual(Either.left("key set was not signed recently"))
    expect(KeySet.verify(body, [a.publicKey], now - 6 * 60_000)).toEqual(Either.left("key set was not signed recently"))
  })

  it("refuses bytes that are not a key set", () => {
    expect(Either.isLeft(KeySet.verify(new Uint8Array([0xff, 0xff]), [a.publicKey], now))).toBe(true)
  })

  it("says when each key retires, under the signatures", () => {
    const body = KeySet.sign([{ ...a, retiresAt: now + 3_600_000 }, b], now)
    const keys = Either.getOrThrow(KeySet.verify(body, [a.publicKey], now))
    expect(keys.map((k) => [k.id, k.retiresAt])).toEqual([
      [1, now + 3_600_000],
      [2, undefined],
    ])
  })

  it("re-anchors on a set only when the credential the control plane just issued verifies under one of its keys", () => {
    const body = KeySet.sign([b], now)
    const issued = Biscuit.mint(
      { peerId: "12D3KooWtest", role: "mesh:role:node", labels: {}, expiresAtMs: now + 60_000 },
      b,
    )
    expect(Either.map(KeySet.verifyAnchoredBy(body, issued, now), (keys) => keys.map((k) => k.id))).toEqual(
      Either.right([2]),
    )
    // A credential of a key outside the set, or a set from keys nobody issued anything with: refused.
    const foreign = Biscuit.mint(
      { peerId: "12D3KooWtest", role: "mesh:role:node", labels: {}, expiresAtMs: now + 60_000 },
      stranger,
    )
    expect(Either.isLeft(KeySet.verifyAnchoredBy(body, foreign, now))).toBe(true)
    expect(Either.isLeft(KeySet.verifyAnchoredBy(KeySet.sign([stranger], now), issued, now))).toBe(true)
  })
})

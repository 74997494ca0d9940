import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
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
})

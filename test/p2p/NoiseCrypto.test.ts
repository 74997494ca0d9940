/**
 * The mesh's noise crypto seals and opens frames exactly as noise's default does (same bytes on the wire, so it
 * interoperates with any libp2p peer), for whole buffers and for lists of parts, below and above the size where it
 * takes over, and still refuses a frame whose bytes or tag were changed.
 */
import { randomBytes } from "node:crypto"
import { defaultCrypto } from "@chainsafe/libp2p-noise/crypto"
import { Uint8ArrayList } from "uint8arraylist"
import { describe, expect, it } from "vitest"
import { crypto } from "../../src/p2p/NoiseCrypto.js"

const bytesOf = (value: Uint8Array | { subarray(): Uint8Array }) =>
  Buffer.from(value instanceof Uint8Array ? value : value.subarray())

/** The same bytes cut in three parts, as noise hands a frame that arrived in several chunks. */
const inParts = (bytes: Uint8Array) => {
  const third = Math.floor(bytes.byteLength / 3)
  return new Uint8ArrayList(bytes.subarray(0, third), bytes.subarray(third, 2 * third), bytes.subarray(2 * third))
}

// noise's largest frame is 65535 bytes, its tag included.
const SIZES = [0, 1, 100, 1199, 1200, 1201, 4096, 65519]

describe("noise crypto with a key object per session", () => {
  const key = randomBytes(32)
  const ad = randomBytes(32)
  const nonce = (n: number) => {
    const bytes = new Uint8Array(12)
    new DataView(bytes.buffer).setUint32(4, n, true)
    return bytes
  }

  it("seals every size to noise's own bytes, from a buffer or from parts", () => {
    SIZES.forEach((size, i) => {
      const plaintext = randomBytes(size)
      const expected = bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce(i), ad, key))
      expect(bytesOf(crypto.chaCha20Poly1305Encrypt(plaintext, nonce(i), ad, key))).toEqual(expected)
      expect(bytesOf(crypto.chaCha20Poly1305Encrypt(inParts(plaintext) as never, nonce(i), ad, key))).toEqual(expected)
    })
  })

  it("opens what noise's default sealed, from a buffer or from parts", () => {
    SIZES.forEach((size, i) => {
      const plaintext = randomBytes(size)
      const sealed = bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce(i), ad, key))
      expect(bytesOf(crypto.chaCha20Poly1305Decrypt(sealed, nonce(i), ad, key))).toEqual(plaintext)
      expect(bytesOf(crypto.chaCha20Poly1305Decrypt(inParts(sealed) as never, nonce(i), ad, key))).toEqual(plaintext)
    })
  })

  it("refuses a large frame changed in its body, its tag, its nonce or its key", () => {
    const plaintext = randomBytes(4096)
    const sealed = bytesOf(crypto.chaCha20Poly1305Encrypt(plaintext, nonce(7), ad, key))
    const body = Buffer.from(sealed)
    body[10] = (body[10] ?? 0) ^ 1
    const tag = Buffer.from(sealed)
    tag[tag.byteLength - 1] = (tag[tag.byteLength - 1] ?? 0) ^ 1
    expect(() => crypto.chaCha20Poly1305Decrypt(body, nonce(7), ad, key)).toThrow()
    expect(() => crypto.chaCha20Poly1305Decrypt(tag, nonce(7), ad, key)).toThrow()
    expect(() => crypto.chaCha20Poly1305Decrypt(sealed, nonce(8), ad, key)).toThrow()
    expect(() => crypto.chaCha20Poly1305Decrypt(sealed, nonce(7), ad, randomBytes(32))).toThrow()
  })

  it("keeps each session's key its own: two keys used in turn seal as each one alone does", () => {
    const other = randomBytes(32)
    const plaintext = randomBytes(4096)
    for (const [k, n] of [
      [key, 1],
      [other, 2],
      [key, 3],
      [other, 4],
    ] as const) {
      expect(bytesOf(crypto.chaCha20Poly1305Encrypt(plaintext, nonce(n), ad, k))).toEqual(
        bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce(n), ad, k)),
      )
    }
  })
})

/**
 * The mesh's noise crypto seals and opens frames exactly as noise's default does (same bytes on the wire, so it
 * interoperates with any libp2p peer), for whole buffers and for lists of parts, below and above the size where it
 * takes over, and still refuses a frame whose bytes or tag were changed.
 */
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

/** `size` bytes that depend only on `seed`: the same in every run. */
const bytes = (size: number, seed: number) =>
  Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed * 17 + 7) & 0xff)

// noise's largest frame is 65535 bytes, its tag included.
const SIZES = [0, 1, 100, 1199, 1200, 1201, 4096, 65519]

/** Each size's plaintext, with a nonce number of its own. */
const eachSize = (check: (plaintext: Uint8Array, n: number) => void) =>
  SIZES.forEach((size, n) => check(bytes(size, n), n))

describe("noise crypto with a key object per session", () => {
  const key = bytes(32, 1)
  const ad = bytes(32, 2)
  const nonce = (n: number) => {
    const bytes = new Uint8Array(12)
    new DataView(bytes.buffer).setUint32(4, n, true)
    return bytes
  }

  it("seals every size to noise's own bytes, from a buffer or from parts", () => {
    eachSize((plaintext, n) => {
      const expected = bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce(n), ad, key))
      expect(bytesOf(crypto.chaCha20Poly1305Encrypt(plaintext, nonce(n), ad, key))).toEqual(expected)
      expect(bytesOf(crypto.chaCha20Poly1305Encrypt(inParts(plaintext) as never, nonce(n), ad, key))).toEqual(expected)
    })
  })

  it("opens what noise's default sealed, from a buffer or from parts", () => {
    eachSize((plaintext, n) => {
      const sealed = bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce(n), ad, key))
      expect(bytesOf(crypto.chaCha20Poly1305Decrypt(sealed, nonce(n), ad, key))).toEqual(Buffer.from(plaintext))
      expect(bytesOf(crypto.chaCha20Poly1305Decrypt(inParts(sealed) as never, nonce(n), ad, key))).toEqual(
        Buffer.from(plaintext),
      )
    })
  })

  it("refuses a large frame changed in its body, its tag, its nonce or its key", () => {
    const plaintext = bytes(4096, 3)
    const sealed = bytesOf(crypto.chaCha20Poly1305Encrypt(plaintext, nonce(7), ad, key))
    const body = Buffer.from(sealed)
    body[10] = (body[10] ?? 0) ^ 1
    const tag = Buffer.from(sealed)
    tag[tag.byteLength - 1] = (tag[tag.byteLength - 1] ?? 0) ^ 1
    expect(() => crypto.chaCha20Poly1305Decrypt(body, nonce(7), ad, key)).toThrow()
    expect(() => crypto.chaCha20Poly1305Decrypt(tag, nonce(7), ad, key)).toThrow()
    expect(() => crypto.chaCha20Poly1305Decrypt(sealed, nonce(8), ad, key)).toThrow()
    expect(() => crypto.chaCha20Poly1305Decrypt(sealed, nonce(7), ad, bytes(32, 4))).toThrow()
  })

  it("keeps each session's key its own: two keys used in turn seal as each one alone does", () => {
    const other = bytes(32, 5)
    const plaintext = bytes(4096, 6)
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

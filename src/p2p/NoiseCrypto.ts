/**
 * noise's own crypto with each session's key imported once. Its default seals and opens a frame of 1200 bytes or more
 * with node:crypto, passing the session key as bytes, so node:crypto imports that key again for every frame (about 4%
 * of a node's busy time moving a 1 MiB body), and it copies each sealed frame once more to append its tag. Here the
 * key object is kept beside the key's bytes (a session's cipher state keeps the same bytes for its whole life, and a
 * new state gets new bytes), and a sealed frame is handed on as its two parts. Small frames, the handshake, hashing
 * and key agreement are noise's default, untouched.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from "node:crypto"
import type { ICryptoInterface } from "@chainsafe/libp2p-noise"
import { defaultCrypto } from "@chainsafe/libp2p-noise/crypto"
import { Uint8ArrayList } from "uint8arraylist"

const ALGORITHM = "chacha20-poly1305"
const TAG_LENGTH = 16
/** Below this noise's default uses its WebAssembly cipher, faster there than node:crypto's setup. */
const NODE_CRYPTO_FROM = 1200

/**
 * One key object per key's bytes. A key's bytes are never changed in place by noise; if they were, the frame would
 * be sealed or opened with the old key and fail its tag check (refused, not weakened).
 */
const keys = new WeakMap<Uint8Array, KeyObject>()

const keyOf = (bytes: Uint8Array): KeyObject => {
  const found = keys.get(bytes)
  if (found !== undefined) return found
  const key = createSecretKey(bytes)
  keys.set(bytes, key)
  return key
}

/**
 * noise bundles an older major of uint8arraylist; its lists take ours as parts (both recognise a list by the same
 * registered symbol and read the same `bufs`), so only the types differ.
 */
type NoiseOutput = ReturnType<ICryptoInterface["chaCha20Poly1305Encrypt"]>
const toNoise = (list: Uint8ArrayList): NoiseOutput => list as unknown as NoiseOutput

const seal: ICryptoInterface["chaCha20Poly1305Encrypt"] = (plaintext, nonce, ad, k) => {
  if (plaintext.byteLength < NODE_CRYPTO_FROM) return defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k)
  const cipher = createCipheriv(ALGORITHM, keyOf(k), nonce, { authTagLength: TAG_LENGTH })
  cipher.setAAD(ad, { plaintextLength: plaintext.byteLength })
  const sealed = new Uint8ArrayList()
  for (const part of plaintext instanceof Uint8Array ? [plaintext] : plaintext) sealed.append(cipher.update(part))
  // chacha20-poly1305 is a stream cipher: `final` adds no bytes, only fixes the tag.
  cipher.final()
  sealed.append(cipher.getAuthTag())
  return toNoise(sealed)
}

const open: ICryptoInterface["chaCha20Poly1305Decrypt"] = (ciphertext, nonce, ad, k, dst) => {
  if (ciphertext.byteLength < NODE_CRYPTO_FROM)
    return defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst)
  const textLength = ciphertext.byteLength - TAG_LENGTH
  const decipher = createDecipheriv(ALGORITHM, keyOf(k), nonce, { authTagLength: TAG_LENGTH })
  decipher.setAAD(ad, { plaintextLength: textLength })
  decipher.setAuthTag(ciphertext.subarray(textLength))
  if (ciphertext instanceof Uint8Array) {
    const opened = decipher.update(ciphertext.subarray(0, textLength))
    // Throws when the tag does not match: noise then aborts the connection.
    decipher.final()
    return opened
  }
  const opened = new Uint8ArrayList()
  for (const part of ciphertext.sublist(0, textLength)) opened.append(decipher.update(part))
  decipher.final()
  return toNoise(opened)
}

export const crypto: ICryptoInterface = {
  ...defaultCrypto,
  chaCha20Poly1305Encrypt: seal,
  chaCha20Poly1305Decrypt: open,
}

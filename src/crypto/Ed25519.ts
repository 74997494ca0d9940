/**
 * Ed25519 on node:crypto (OpenSSL), the fast path for every signature the mesh checks on a request: challenges,
 * key sets, mesh events. Keys travel as raw bytes: a 32-byte public key, a 32-byte private seed.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from "node:crypto"

const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex")
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex")

export const PUBLIC_KEY_LENGTH = 32
export const SIGNATURE_LENGTH = 64

export const publicKeyObject = (raw: Uint8Array): KeyObject =>
  createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" })

export const privateKeyObject = (seed: Uint8Array): KeyObject =>
  createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" })

/** SPKI DER of a raw public key, the form identity evidence publishes. */
export const spkiDer = (raw: Uint8Array): Uint8Array => new Uint8Array(Buffer.concat([SPKI_PREFIX, raw]))

/**
 * Parsed keys, most recently used last. Importing a key costs as much as a verification (and a private key several
 * times more), and the same few thousand keys sign and verify request after request.
 */
class KeyCache {
  private readonly entries = new Map<string, KeyObject>()
  constructor(
    private readonly size: number,
    private readonly load: (raw: Uint8Array) => KeyObject,
  ) {}
  get(raw: Uint8Array): KeyObject {
    const id = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("base64")
    let key = this.entries.get(id)
    if (key === undefined) {
      key = this.load(raw)
      if (this.entries.size >= this.size) this.entries.delete(this.entries.keys().next().value as string)
    } else {
      this.entries.delete(id)
    }
    this.entries.set(id, key)
    return key
  }
}

const publicKeys = new KeyCache(8192, publicKeyObject)
const privateKeys = new KeyCache(64, privateKeyObject)

/** True when `signature` is a valid signature of `message` by `publicKey` (raw bytes or a prepared KeyObject). */
export const verifySignature = (
  publicKey: Uint8Array | KeyObject,
  message: Uint8Array,
  signature: Uint8Array,
): boolean => {
  if (signature.length !== SIGNATURE_LENGTH) return false
  if (publicKey instanceof Uint8Array && publicKey.length !== PUBLIC_KEY_LENGTH) return false
  try {
    return verify(null, message, publicKey instanceof Uint8Array ? publicKeys.get(publicKey) : publicKey, signature)
  } catch {
    return false
  }
}

export const signMessage = (privateKey: Uint8Array | KeyObject, message: Uint8Array): Uint8Array =>
  new Uint8Array(sign(null, message, privateKey instanceof Uint8Array ? privateKeys.get(privateKey) : privateKey))

export interface RawKeyPair {
  readonly seed: Uint8Array
  readonly publicKey: Uint8Array
}

export const generate = (): RawKeyPair => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  return {
    seed: new Uint8Array(privateKey.export({ format: "der", type: "pkcs8" }).subarray(PKCS8_PREFIX.length)),
    publicKey: new Uint8Array(publicKey.export({ format: "der", type: "spki" }).subarray(SPKI_PREFIX.length)),
  }
}

/** The public key of a private seed. */
export const publicKeyOf = (seed: Uint8Array): Uint8Array =>
  new Uint8Array(
    createPublicKey(privateKeyObject(seed)).export({ format: "der", type: "spki" }).subarray(SPKI_PREFIX.length),
  )

/**
 * The signed key set of `GET /keys`: the control plane's live public keys and a sign time, signed by every key in
 * the set over the deterministic encoding of the message without its signatures.
 *
 * `verify` is the client side used by routers and nodes: a set is accepted only if a key the caller already trusts
 * is in it and signed it, every listed key signed it (possession), and it was signed recently (no replay of a set
 * that still lists a retired key).
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt"
import { Either } from "effect"
import * as Biscuit from "../crypto/Biscuit.js"
import * as Ed25519 from "../crypto/Ed25519.js"
import { type KeysResponse, KeysResponseSchema } from "../gen/mesh_pb.js"

export interface PublicSigningKey {
  readonly id: number
  readonly publicKey: Uint8Array
  /** When the key stops being accepted (unix ms), if the set says so. */
  readonly retiresAt?: number | undefined
}

export interface SigningKeyPair extends PublicSigningKey {
  readonly seed: Uint8Array
}

/** How far a set's sign time may be from the verifier's clock. */
export const MAX_SIGN_AGE_MS = 5 * 60 * 1000

const signedPayload = (message: KeysResponse): Uint8Array =>
  toBinary(KeysResponseSchema, create(KeysResponseSchema, { ...message, signatures: [] }))

export const sign = (
  keys: ReadonlyArray<SigningKeyPair & { readonly retiresAt?: number | undefined }>,
  nowMs: number,
): Uint8Array => {
  const unsigned = create(KeysResponseSchema, {
    publicKeys: keys.map((k) => k.publicKey),
    keyIds: keys.map((k) => k.id),
    signTime: timestampFromMs(nowMs),
    retireUnixMs: keys.map((k) => BigInt(k.retiresAt ?? 0)),
  })
  const payload = signedPayload(unsigned)
  return toBinary(
    KeysResponseSchema,
    create(KeysResponseSchema, { ...unsigned, signatures: keys.map((k) => Ed25519.signMessage(k.seed, payload)) }),
  )
}

const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0

/** Checks a /keys body against the keys the caller trusts; returns the keys of the set. */
export const verify = (
  body: Uint8Array,
  trusted: ReadonlyArray<Uint8Array>,
  nowMs: number,
): Either.Either<ReadonlyArray<PublicSigningKey>, string> => {
  let message: KeysResponse
  try {
    message = fromBinary(KeysResponseSchema, body)
  } catch {
    return Either.left("key set is not a KeysResponse")
  }
  const n = message.publicKeys.length
  if (n === 0) return Either.left("key set is empty")
  if (message.signatures.length !== n || message.keyIds.length !== n) return Either.left("key set is malformed")
  if (message.retireUnixMs.length !== 0 && message.retireUnixMs.length !== n) return Either.left("key set is malformed")
  if (message.publicKeys.some((k) => k.length !== Ed25519.PUBLIC_KEY_LENGTH)) return Either.left("key set is malformed")
  if (message.signTime === undefined) return Either.left("key set has no sign time")
  const signedAt = timestampDate(message.signTime).getTime()
  if (Math.abs(nowMs - signedAt) > MAX_SIGN_AGE_MS) return Either.left("key set was not signed recently")
  const payload = signedPayload(message)
  for (let i = 0; i < n; i++) {
    if (!Ed25519.verifySignature(message.publicKeys[i] as Uint8Array, payload, message.signatures[i] as Uint8Array)) {
      return Either.left("key set has an invalid signature")
    }
  }
  if (!message.publicKeys.some((k) => trusted.some((t) => equal(k, t)))) {
    return Either.left("key set is not signed by a trusted key")
  }
  return Either.right(
    message.publicKeys.map((publicKey, i) => {
      const retiresAt = Number(message.retireUnixMs[i] ?? 0n)
      return { id: message.keyIds[i] as number, publicKey, retiresAt: retiresAt > 0 ? retiresAt : undefined }
    }),
  )
}

/**
 * A key set checked against a credential instead of trusted keys: accepted when it is otherwise sound (every key
 * signed it, recently) and `credential` verifies under one of its keys. For a member whose trusted keys all retired
 * while it was away: the control plane it is pointed at has just issued it that credential (a refresh with
 * autonomous recovery, or a new enrollment), which is the trust its first enrollment rested on too.
 */
export const verifyAnchoredBy = (
  body: Uint8Array,
  credential: Uint8Array,
  nowMs: number,
): Either.Either<ReadonlyArray<PublicSigningKey>, string> => {
  let listed: ReadonlyArray<Uint8Array>
  try {
    listed = fromBinary(KeysResponseSchema, body).publicKeys
  } catch {
    return Either.left("key set is not a KeysResponse")
  }
  return Either.flatMap(verify(body, listed, nowMs), (keys) => {
    const byId = new Map(keys.map((k) => [k.id, k.publicKey]))
    return Either.isRight(Biscuit.verify(credential, (id) => byId.get(id), nowMs))
      ? Either.right(keys)
      : Either.left("key set is not signed by a trusted key, and our credential is not signed by any of its keys")
  })
}

/**
 * A peer's identity: its libp2p Ed25519 public key and the peer id derived from it (`12D3KooW...`). Requests carry
 * the key as the libp2p protobuf encoding; the peer id they claim must derive from it, and is stored canonical.
 */
import { publicKeyFromProtobuf, publicKeyFromRaw, publicKeyToProtobuf } from "@libp2p/crypto/keys"
import { peerIdFromPublicKey, peerIdFromString } from "@libp2p/peer-id"
import { Either } from "effect"
import * as Ed25519 from "../crypto/Ed25519.js"

export interface PeerKey {
  /** Canonical base58btc peer id. */
  readonly peerId: string
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array
}

/** Decodes a libp2p protobuf public key; only Ed25519 keys are accepted. */
export const fromProtobuf = (bytes: Uint8Array): Either.Either<PeerKey, string> => {
  try {
    const key = publicKeyFromProtobuf(bytes)
    if (key.type !== "Ed25519") return Either.left("public_key must be an Ed25519 key")
    return Either.right({ peerId: peerIdFromPublicKey(key).toString(), publicKey: key.raw })
  } catch {
    return Either.left("public_key is not a libp2p public key")
  }
}

/** The libp2p protobuf encoding of a raw Ed25519 public key. */
export const toProtobuf = (publicKey: Uint8Array): Uint8Array => publicKeyToProtobuf(publicKeyFromRaw(publicKey))

export const peerIdOf = (publicKey: Uint8Array): string => peerIdFromPublicKey(publicKeyFromRaw(publicKey)).toString()

/** Parses a claimed peer id (base58btc or CIDv1) into its canonical form. */
export const canonicalPeerId = (text: string): Either.Either<string, string> => {
  try {
    return Either.right(peerIdFromString(text.trim()).toString())
  } catch {
    return Either.left("peer_id is not a valid peer id")
  }
}

/** Peer ids seen valid lately: parsing one decodes its key, a cost every remote call paid for the same few peers. */
const validIds = new Set<string>()
const MAX_VALID_IDS = 256

/** Whether `text` parses as a peer id, as it is (no trimming). */
export const isPeerId = (text: string): boolean => {
  if (validIds.has(text)) return true
  try {
    peerIdFromString(text)
  } catch {
    return false
  }
  if (validIds.size >= MAX_VALID_IDS) validIds.clear()
  validIds.add(text)
  return true
}

/** The raw Ed25519 public key an Ed25519 peer id embeds: the key to check a proof of possession before any lookup. */
export const publicKeyOf = (peerId: string): Either.Either<Uint8Array, string> => {
  try {
    const key = peerIdFromString(peerId).publicKey
    return key?.type === "Ed25519" ? Either.right(key.raw) : Either.left("peer_id does not name an Ed25519 key")
  } catch {
    return Either.left("peer_id is not a valid peer id")
  }
}

/** Checks that `claimed` names the key in `publicKeyProtobuf`; returns the key with the canonical peer id. */
export const bind = (claimed: string, publicKeyProtobuf: Uint8Array): Either.Either<PeerKey, string> =>
  Either.flatMap(Either.all([canonicalPeerId(claimed), fromProtobuf(publicKeyProtobuf)]), ([peerId, key]) =>
    peerId === key.peerId ? Either.right(key) : Either.left("peer_id is not derived from public_key"),
  )

/** A fresh identity, with its private seed: what a node or router makes once and keeps. */
export const generate = (): PeerKey & { readonly seed: Uint8Array } => {
  const pair = Ed25519.generate()
  return { seed: pair.seed, publicKey: pair.publicKey, peerId: peerIdOf(pair.publicKey) }
}

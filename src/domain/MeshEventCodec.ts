/**
 * Signed mesh events on the gossip topic `/mesh/events/v1`: a MeshEvent message whose `signature` is an Ed25519
 * signature by a control-plane signing key over the deterministic encoding of the event with the signature unset.
 * Receivers accept an event only if a key they trust verifies it and its time is within five minutes of their clock,
 * and apply it only if its sequence is newer than the last they applied about the same subject: a captured event
 * re-published later (an old "unbanned" after a newer "banned") changes nothing.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt"
import { Either } from "effect"
import * as Ed25519 from "../crypto/Ed25519.js"
import { MeshEvent_Type, type MeshEvent as MeshEventMessage, MeshEventSchema } from "../gen/mesh_pb.js"

export const TOPIC = "/mesh/events/v1"

/** How far an event's time may be from the receiver's clock. */
export const MAX_SKEW_MS = 5 * 60 * 1000

/**
 * `sequence` grows with every event about the same subject: the peer's ban version for bans and unbans, the new
 * key's id for a key rotation, the policy version for a policy update.
 */
export type Event =
  | { readonly type: "banned"; readonly peerId: string; readonly sequence: number }
  | { readonly type: "unbanned"; readonly peerId: string; readonly sequence: number }
  | { readonly type: "key_rotation"; readonly publicKey: Uint8Array; readonly sequence: number }
  | { readonly type: "policy_update"; readonly sequence: number }

/** What an event is about: events about one subject are ordered by their sequence. */
export const subjectOf = (event: Event): string => {
  switch (event.type) {
    case "banned":
    case "unbanned":
      return `ban:${event.peerId}`
    case "key_rotation":
      return "keys"
    case "policy_update":
      return "policy"
  }
}

/** Pure rule: whether `event` is newer than the last sequence applied about its subject. */
export const isNewer = (latest: ReadonlyMap<string, number>, event: Event): boolean =>
  event.sequence > (latest.get(subjectOf(event)) ?? 0)

const toType = {
  banned: MeshEvent_Type.BANNED,
  unbanned: MeshEvent_Type.UNBANNED,
  key_rotation: MeshEvent_Type.KEY_ROTATION,
  policy_update: MeshEvent_Type.POLICY_UPDATE,
} as const

const unsigned = (message: MeshEventMessage): Uint8Array =>
  toBinary(MeshEventSchema, create(MeshEventSchema, { ...message, signature: new Uint8Array(0) }))

export const encode = (event: Event, signerSeed: Uint8Array, nowMs: number): Uint8Array => {
  const message = create(MeshEventSchema, {
    type: toType[event.type],
    peerId: event.type === "banned" || event.type === "unbanned" ? event.peerId : "",
    eventTime: timestampFromMs(nowMs),
    newPublicKey: event.type === "key_rotation" ? event.publicKey : new Uint8Array(0),
    sequence: BigInt(event.sequence),
  })
  return toBinary(
    MeshEventSchema,
    create(MeshEventSchema, { ...message, signature: Ed25519.signMessage(signerSeed, unsigned(message)) }),
  )
}

/** Decodes and checks an event against the trusted keys and the clock. */
export const decode = (
  bytes: Uint8Array,
  trusted: ReadonlyArray<Uint8Array>,
  nowMs: number,
): Either.Either<Event, string> => {
  let message: MeshEventMessage
  try {
    message = fromBinary(MeshEventSchema, bytes)
  } catch {
    return Either.left("not a MeshEvent")
  }
  if (message.signature.length === 0) return Either.left("unsigned")
  const payload = unsigned(message)
  if (!trusted.some((key) => Ed25519.verifySignature(key, payload, message.signature))) {
    return Either.left("not signed by a trusted key")
  }
  if (message.eventTime === undefined) return Either.left("no event time")
  if (Math.abs(nowMs - timestampDate(message.eventTime).getTime()) > MAX_SKEW_MS)
    return Either.left("too far from our clock")
  const sequence = Number(message.sequence)
  if (sequence <= 0 || !Number.isSafeInteger(sequence)) return Either.left("no sequence")
  switch (message.type) {
    case MeshEvent_Type.BANNED:
      return message.peerId.length > 0
        ? Either.right({ type: "banned", peerId: message.peerId, sequence })
        : Either.left("no peer id")
    case MeshEvent_Type.UNBANNED:
      return message.peerId.length > 0
        ? Either.right({ type: "unbanned", peerId: message.peerId, sequence })
        : Either.left("no peer id")
    case MeshEvent_Type.KEY_ROTATION:
      return message.newPublicKey.length === Ed25519.PUBLIC_KEY_LENGTH
        ? Either.right({ type: "key_rotation", publicKey: message.newPublicKey, sequence })
        : Either.left("bad key")
    case MeshEvent_Type.POLICY_UPDATE:
      return Either.right({ type: "policy_update", sequence })
    default:
      return Either.left("unknown type")
  }
}

/**
 * `/mesh/auth/1.0.0`: the dialer sends `AuthFrame{biscuit}`, the listener answers `AuthResponse`. Each message is one
 * unsigned-varint length prefix and the protobuf bytes, at most 64 KiB. This module holds the wire pieces and the
 * rule both sides apply to the credential they receive; the flows that use them are in Handshake.ts.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import type { Stream } from "@libp2p/interface"
import { Either } from "effect"
import * as lp from "it-length-prefixed"
import * as Biscuit from "../crypto/Biscuit.js"
import { type AuthFrame, AuthFrameSchema, type AuthResponse, AuthResponseSchema } from "../gen/mesh_pb.js"
import type { AuthenticatedPeer, MeshTrust } from "./Trust.js"

export const PROTOCOL = "/mesh/auth/1.0.0"

/** Largest frame either side reads; a credential is a few hundred bytes. */
export const MAX_FRAME_BYTES = 64 * 1024

/** Longest refusal text we pass on from a remote peer (it is theirs, not ours: keep it short and printable). */
const MAX_REMOTE_ERROR = 200

export const encodeFrame = (message: { readonly biscuit: Uint8Array }): Uint8Array =>
  toBinary(AuthFrameSchema, create(AuthFrameSchema, { biscuit: message.biscuit }))

export const decodeFrame = (bytes: Uint8Array): Either.Either<AuthFrame, string> =>
  Either.try({ try: () => fromBinary(AuthFrameSchema, bytes), catch: () => "auth frame is not an AuthFrame" })

export const encodeResponse = (message: {
  readonly success: boolean
  readonly error?: string
  readonly biscuit?: Uint8Array
}): Uint8Array =>
  toBinary(
    AuthResponseSchema,
    create(AuthResponseSchema, {
      success: message.success,
      error: message.error ?? "",
      biscuit: message.biscuit ?? new Uint8Array(),
    }),
  )

export const decodeResponse = (bytes: Uint8Array): Either.Either<AuthResponse, string> =>
  Either.try({ try: () => fromBinary(AuthResponseSchema, bytes), catch: () => "auth answer is not an AuthResponse" })

/** Queues one length-prefixed frame on the stream. */
export const writeFrame = (stream: Stream, payload: Uint8Array): void => {
  stream.send(lp.encode.single(payload, { maxDataLength: MAX_FRAME_BYTES }))
}

/**
 * Reads exactly one frame. An abort of `signal` aborts the stream, which ends the read: the caller's deadline is the
 * only thing that bounds a silent peer.
 */
export const readFrame = async (stream: Stream, signal?: AbortSignal): Promise<Uint8Array> => {
  const onAbort = () => stream.abort(new Error("auth handshake deadline passed"))
  signal?.addEventListener("abort", onAbort, { once: true })
  try {
    for await (const frame of lp.decode(stream, { maxDataLength: MAX_FRAME_BYTES })) return frame.subarray()
    throw new Error("stream ended before an auth frame")
  } finally {
    signal?.removeEventListener("abort", onAbort)
  }
}

const biscuitFailures: Record<Biscuit.Failure, string> = {
  malformed: "credential is malformed",
  unknown_key: "credential is signed by an unknown or retired key",
  bad_signature: "credential signature is invalid",
  attenuated: "credential carries blocks the control plane did not issue",
  expired: "credential has expired",
}

/**
 * The rule both sides apply: the credential verifies under a live control-plane key at `nowMs`, names the peer at
 * the other end of the connection, and that peer is not banned. The refusal text is short and holds no secret.
 */
export const check = (
  credential: Uint8Array,
  remotePeerId: string,
  trust: MeshTrust,
  nowMs: number,
): Either.Either<Biscuit.Verified, string> => {
  if (trust.isBanned(remotePeerId)) return Either.left("peer is banned")
  if (credential.length === 0) return Either.left("no credential")
  return Either.flatMap(
    Either.mapLeft(Biscuit.verify(credential, trust.keyFor, nowMs), (failure) => biscuitFailures[failure]),
    (verified) =>
      verified.facts.peerId === remotePeerId ? Either.right(verified) : Either.left("credential names another peer"),
  )
}

export const toPeer = (verified: Biscuit.Verified, credential: Uint8Array, nowMs: number): AuthenticatedPeer => ({
  peerId: verified.facts.peerId,
  role: verified.facts.role,
  labels: verified.facts.labels,
  ...(verified.facts.identity === undefined ? {} : { identity: verified.facts.identity }),
  expiresAtMs: verified.facts.expiresAtMs,
  keyId: verified.keyId,
  credential,
  verifiedAtMs: nowMs,
})

/** A remote peer's refusal text, cut short and stripped of control characters before we repeat it. */
export const remoteError = (text: string): string =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  text.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, MAX_REMOTE_ERROR) || "no reason given"

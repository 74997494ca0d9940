/**
 * Proof of possession: the caller signs `mesh:<endpoint>:<peer_id>:<unix-millis>` with its Ed25519 key, and the
 * control plane accepts it within five minutes either way of its clock. A route whose body is worth binding (a tool
 * drift report, which an operator may approve) appends `:<body digest>`, so a captured signature vouches for that body
 * only. Pure functions; the clock is the caller's.
 */
import { Either } from "effect"
import * as Ed25519 from "../crypto/Ed25519.js"

export type Endpoint =
  | "register"
  | "enroll"
  | "enroll-status"
  | "refresh"
  | "routers-lease"
  | "policies"
  | "nodes-catalog"
  | "nodes-tool-drift"

export const WINDOW_MS = 5 * 60 * 1000

export const payload = (endpoint: Endpoint, peerId: string, unixMs: bigint | number, bound?: string): Uint8Array =>
  new TextEncoder().encode(`mesh:${endpoint}:${peerId}:${String(unixMs)}${bound === undefined ? "" : `:${bound}`}`)

export const sign = (
  seed: Uint8Array,
  endpoint: Endpoint,
  peerId: string,
  unixMs: bigint | number,
  bound?: string,
): Uint8Array => Ed25519.signMessage(seed, payload(endpoint, peerId, unixMs, bound))

/** Stable reasons, part of the API's error messages. */
export const reasons = {
  missing: "missing or invalid challenge timestamp",
  stale: "stale or invalid challenge timestamp",
  signature: "challenge signature verification failed",
} as const

export const check = (options: {
  readonly endpoint: Endpoint
  readonly peerId: string
  readonly publicKey: Uint8Array
  readonly unixMs: bigint | number
  readonly signature: Uint8Array
  readonly nowMs: number
  /** What the signature must also cover (the body's digest), for the routes that bind one. */
  readonly bound?: string
}): Either.Either<void, string> => {
  const ts = Number(options.unixMs)
  if (!Number.isSafeInteger(ts) || ts <= 0) return Either.left(reasons.missing)
  if (Math.abs(options.nowMs - ts) > WINDOW_MS) return Either.left(reasons.stale)
  return Ed25519.verifySignature(
    options.publicKey,
    payload(options.endpoint, options.peerId, ts, options.bound),
    options.signature,
  )
    ? Either.void
    : Either.left(reasons.signature)
}

/** Header form of a signature: unpadded base64url. */
export const toHeader = (signature: Uint8Array): string => Buffer.from(signature).toString("base64url")

export const fromHeader = (text: string): Either.Either<Uint8Array, string> =>
  /^[A-Za-z0-9_-]+={0,2}$/.test(text)
    ? Either.right(new Uint8Array(Buffer.from(text, "base64url")))
    : Either.left(reasons.signature)

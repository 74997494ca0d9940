/**
 * Mints and verifies mesh credentials (biscuits signed by the KeyRing's current key). Minting caps the lifetime at
 * `--biscuit-ttl` and at any deadline the caller gives (an ID token's expiry, the session's end).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Context, Data, type Effect } from "effect"
import type { Facts, Failure, Verified } from "../../crypto/Biscuit.js"
import { Unauthorized } from "../../domain/Errors.js"

export interface Minted {
  readonly bytes: Uint8Array
  /** Standard base64: the credential's text form. */
  readonly text: string
  readonly expiresAtMs: number
  /** SHA-256 of the bytes, what the node record keeps to recognise the current credential. */
  readonly digest: Uint8Array
}

export interface MintRequest extends Omit<Facts, "expiresAtMs"> {
  /** A deadline the credential must not outlive (unix ms). */
  readonly notAfterMs?: number
}

export interface CredentialsService {
  readonly mint: (request: MintRequest) => Effect.Effect<Minted>
  readonly verify: (
    bytes: Uint8Array,
    options?: { readonly allowExpired?: boolean },
  ) => Effect.Effect<Verified, CredentialRejected>
}

export class Credentials extends Context.Tag("mesh/Credentials")<Credentials, CredentialsService>() {}

export const digest = (bytes: Uint8Array): Uint8Array => new Uint8Array(createHash("sha256").update(bytes).digest())

/** Constant-time comparison of two digests. */
export const sameDigest = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && timingSafeEqual(a, b)

const failureMessages: Record<Failure, string> = {
  malformed: "credential is malformed",
  unknown_key: "credential is signed by an unknown or retired key",
  bad_signature: "credential signature is invalid",
  attenuated: "credential carries blocks the control plane did not issue",
  expired: "credential has expired",
}

/** Why a credential did not verify; callers decide what it means for them (most answer 401). */
export class CredentialRejected extends Data.TaggedError("CredentialRejected")<{ readonly reason: Failure }> {
  override get message(): string {
    return failureMessages[this.reason]
  }
  get unauthorized(): Unauthorized {
    return new Unauthorized({ message: this.message })
  }
}

/**
 * Proof-of-possession checks for the enrollment and mesh routes: the caller's Ed25519 signature over
 * `mesh:<endpoint>:<peer_id>:<unix-millis>`, within five minutes of the control plane's clock.
 */
import { Context, type Effect } from "effect"
import type { Endpoint } from "../../domain/Challenge.js"
import type { Unauthorized } from "../../domain/Errors.js"

export interface ChallengeProof {
  readonly endpoint: Endpoint
  readonly peerId: string
  /** Raw 32-byte Ed25519 public key the signature must verify under. */
  readonly publicKey: Uint8Array
  readonly unixMs: bigint | number
  readonly signature: Uint8Array
  /** What the signature also covers, for routes that bind their body (Challenge.payload). */
  readonly bound?: string
}

export interface ChallengesService {
  readonly verify: (proof: ChallengeProof) => Effect.Effect<void, Unauthorized>
  /**
   * Verifies and spends the proof: the same signature is refused for the rest of its window, on every replica.
   * For enrollment, where a captured request must not be replayed.
   */
  readonly verifyOnce: (proof: ChallengeProof) => Effect.Effect<void, Unauthorized>
  /** Forgets spent proofs whose window has passed. */
  readonly prune: Effect.Effect<number>
}

export class Challenges extends Context.Tag("mesh/Challenges")<Challenges, ChallengesService>() {}

/**
 * A router's or node's membership of the mesh: its key, its current credential (enrolled once, then refreshed
 * before it expires), the control-plane keys it trusts (taken from enrollment, then only from key sets a trusted key
 * signed) and the bans it knows (from /info and mesh events).
 */
import { Context, Data, type Duration, type Effect, type Option, type Redacted, type Stream } from "effect"
import type * as MeshEventCodec from "../../domain/MeshEventCodec.js"
import type { MeshTrust } from "../../p2p/Trust.js"
import type { ControlPlaneError, Signer } from "./ControlPlaneClient.js"

export interface MembershipOptions {
  /** The role to enroll with: `mesh:role:router` or `mesh:role:node`. */
  readonly role: string
  readonly labels: Readonly<Record<string, string>>
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  /** An OIDC ID token, read when (re-)enrollment needs one. */
  readonly idToken: Option.Option<Effect.Effect<Redacted.Redacted<string>, unknown>>
  /** Where key and credential are kept (files 0600); in memory only when none. */
  readonly dataDir: Option.Option<string>
  /** How often keys and bans are re-read from the control plane; well within the key grace period. */
  readonly syncInterval: Duration.Duration
  /** Spread each sync by up to a tenth more, so a fleet started together does not ask in step. */
  readonly jitter?: boolean
  /** Told once when a bootstrap enrollment is queued for an operator's approval, before the polling starts. */
  readonly onPending?: (pending: PendingEnrollment) => Effect.Effect<void>
}

/** A bootstrap enrollment waiting for approval: what the operator approves, and how often its status is asked. */
export interface PendingEnrollment {
  readonly peerId: string
  readonly requestId: string
  readonly pollInterval: Duration.Duration
}

export interface MembershipService {
  readonly peerId: string
  readonly signer: Signer
  readonly credential: Effect.Effect<Uint8Array>
  readonly credentialExpiresAt: Effect.Effect<number>
  /** Emits after the credential changed (refreshed, or enrolled again). */
  readonly credentialChanges: Stream.Stream<void>
  /** Why the credential cannot be used now (its key retired and no renewal succeeded yet), with what to do. */
  readonly credentialProblem: Effect.Effect<Option.Option<string>>
  readonly trust: Effect.Effect<MeshTrust>
  /** Raw public keys trusted now, to check signed mesh events. */
  readonly trustedKeys: Effect.Effect<ReadonlyArray<Uint8Array>>
  /** Router addresses as last listed by /info. */
  readonly routers: Effect.Effect<ReadonlyArray<string>>
  readonly banned: Effect.Effect<ReadonlySet<string>>
  /** Applies a verified mesh event: bans and unbans at once, a key rotation by re-reading the key set. */
  readonly apply: (event: MeshEventCodec.Event) => Effect.Effect<void>
  /** Re-reads keys and bans now. */
  readonly sync: Effect.Effect<void, ControlPlaneError | MembershipError>
}

export class Membership extends Context.Tag("mesh/Membership")<Membership, MembershipService>() {}

/** Enrollment was refused or rejected, or the key set can no longer be trusted: an operator must act. */
export class MembershipError extends Data.TaggedError("MembershipError")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

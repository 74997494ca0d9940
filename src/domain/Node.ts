/** An enrolled node (or router) as the control plane records it. */
import { Schema } from "effect"

export const EnrollmentType = Schema.Literal("bootstrap", "oidc")
export type EnrollmentType = typeof EnrollmentType.Type

/** The OIDC identity behind an enrollment. */
export const Identity = Schema.Struct({
  issuer: Schema.String,
  subject: Schema.String,
  email: Schema.optionalWith(Schema.String, { exact: true }),
  groups: Schema.Array(Schema.String),
})
export type Identity = typeof Identity.Type

/** Ban key of an identity: bans survive new keypairs of the same person. */
export const identityKey = (identity: Identity): string => `${identity.issuer}|${identity.subject}`

export const Labels = Schema.Record({ key: Schema.String, value: Schema.String })
export type Labels = typeof Labels.Type

export interface Node {
  readonly peerId: string
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array
  readonly role: string
  readonly labels: Labels
  readonly enrollmentType: EnrollmentType
  readonly identity: Identity | undefined
  /** The user who minted the bootstrap token this node enrolled with. */
  readonly ownerId: string | undefined
  readonly autonomousRecovery: boolean
  readonly credentialDigest: Uint8Array
  readonly credentialExpiresAt: number
  /** End of the session (OIDC login + --oidc-session-ttl); undefined when it never ends (bootstrap). */
  readonly sessionExpiresAt: number | undefined
  readonly enrolledAt: number
  readonly refreshedAt: number | undefined
  readonly banned: boolean
  readonly bannedAt: number | undefined
}

/** Pure rule: a node may hold credentials when it is not banned and its session has not ended. */
export const isAdmitted = (node: Node, now: number): boolean =>
  !node.banned && (node.sessionExpiresAt === undefined || now <= node.sessionExpiresAt)

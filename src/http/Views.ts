/**
 * JSON views of domain records for the operator and user APIs: snake_case fields, RFC 3339 times, never a secret
 * (no token hashes, no keys beyond public ones, no credentials).
 */
import { Schema } from "effect"
import * as Token from "../domain/BootstrapToken.js"
import type { EnrollmentRequest } from "../domain/EnrollmentRequest.js"
import type { Node } from "../domain/Node.js"

const time = (ms: number): string => new Date(ms).toISOString()
const optionalTime = (ms: number | undefined): string | null => (ms === undefined ? null : time(ms))

export const BootstrapTokenView = Schema.Struct({
  id: Schema.String,
  role: Schema.String,
  description: Schema.String,
  max_usages: Schema.Number,
  usages_count: Schema.Number,
  autonomous_recovery: Schema.Boolean,
  owner: Schema.NullOr(Schema.String),
  state: Schema.Literal("active", "revoked", "expired", "exhausted", "disabled"),
  revoked: Schema.Boolean,
  created_at: Schema.String,
  expires_at: Schema.String,
  revoked_at: Schema.NullOr(Schema.String),
  last_used_at: Schema.NullOr(Schema.String),
})

export const MintedTokenView = Schema.Struct({
  ...BootstrapTokenView.fields,
  /** The secret, shown only in this answer. */
  token: Schema.String,
  ttl_hours: Schema.Number,
})

export const bootstrapToken = (token: Token.BootstrapToken, now: number, ownerBanned: boolean) => ({
  id: token.id,
  role: token.role,
  description: token.description,
  max_usages: token.maxUsages,
  usages_count: token.usagesCount,
  autonomous_recovery: token.autonomousRecovery,
  owner: token.ownerId ?? null,
  state: Token.stateOf(token, now, ownerBanned),
  revoked: token.revokedAt !== undefined,
  created_at: time(token.createdAt),
  expires_at: time(token.expiresAt),
  revoked_at: optionalTime(token.revokedAt),
  last_used_at: optionalTime(token.lastUsedAt),
})

export const EnrollmentRequestView = Schema.Struct({
  id: Schema.String,
  peer_id: Schema.String,
  requested_role: Schema.String,
  labels: Schema.Record({ key: Schema.String, value: Schema.String }),
  token_id: Schema.String,
  status: Schema.Literal("pending", "approved", "rejected"),
  created_at: Schema.String,
  resolved_at: Schema.NullOr(Schema.String),
  resolved_by: Schema.NullOr(Schema.String),
  /** When the enrollee collected the approval's credential; it is handed out once. */
  released_at: Schema.NullOr(Schema.String),
})

export const enrollmentRequest = (r: EnrollmentRequest) => ({
  id: r.id,
  peer_id: r.peerId,
  requested_role: r.requestedRole,
  labels: { ...r.labels },
  token_id: r.tokenId,
  status: r.status,
  created_at: time(r.createdAt),
  resolved_at: optionalTime(r.resolvedAt),
  resolved_by: r.resolvedBy ?? null,
  released_at: optionalTime(r.releasedAt),
})

export const NodeView = Schema.Struct({
  peer_id: Schema.String,
  role: Schema.String,
  labels: Schema.Record({ key: Schema.String, value: Schema.String }),
  enrollment_type: Schema.Literal("bootstrap", "oidc"),
  identity: Schema.NullOr(
    Schema.Struct({
      issuer: Schema.String,
      subject: Schema.String,
      email: Schema.NullOr(Schema.String),
      groups: Schema.Array(Schema.String),
    }),
  ),
  owner: Schema.NullOr(Schema.String),
  autonomous_recovery: Schema.Boolean,
  state: Schema.Literal("admitted", "expired", "banned"),
  enrolled_at: Schema.String,
  refreshed_at: Schema.NullOr(Schema.String),
  credential_expires_at: Schema.NullOr(Schema.String),
  session_expires_at: Schema.NullOr(Schema.String),
  banned_at: Schema.NullOr(Schema.String),
})

export const node = (n: Node, now: number) => ({
  peer_id: n.peerId,
  role: n.role,
  labels: { ...n.labels },
  enrollment_type: n.enrollmentType,
  identity:
    n.identity === undefined
      ? null
      : {
          issuer: n.identity.issuer,
          subject: n.identity.subject,
          email: n.identity.email ?? null,
          groups: [...n.identity.groups],
        },
  owner: n.ownerId ?? null,
  autonomous_recovery: n.autonomousRecovery,
  state: n.banned
    ? ("banned" as const)
    : n.sessionExpiresAt !== undefined && now > n.sessionExpiresAt
      ? ("expired" as const)
      : ("admitted" as const),
  enrolled_at: time(n.enrolledAt),
  refreshed_at: optionalTime(n.refreshedAt),
  credential_expires_at: n.credentialExpiresAt > 0 ? time(n.credentialExpiresAt) : null,
  session_expires_at: optionalTime(n.sessionExpiresAt),
  banned_at: optionalTime(n.bannedAt),
})

/**
 * Bootstrap tokens: operator- or user-minted secrets that let a machine enroll with a fixed role. The secret is
 * shown once at minting; only its SHA-256 is kept. Spending a usage is one conditional update, so `max_usages`
 * holds under concurrent enrollments.
 */
import { createHash, randomBytes } from "node:crypto"

export interface BootstrapToken {
  readonly id: string
  readonly role: string
  readonly maxUsages: number
  readonly usagesCount: number
  readonly description: string
  readonly autonomousRecovery: boolean
  /** Identity key (`<issuer>|<subject>`) of the user who minted it; undefined for operator tokens. */
  readonly ownerId: string | undefined
  readonly createdAt: number
  readonly expiresAt: number
  readonly revokedAt: number | undefined
  readonly lastUsedAt: number | undefined
}

export type State = "active" | "revoked" | "expired" | "exhausted" | "disabled"

/**
 * Revoked wins over expired, which wins over disabled (the minting user is banned: the spec's owner ban disables the
 * token, even one that is used up, so that an approved peer cannot enroll again with it), then exhausted.
 */
export const stateOf = (
  token: Pick<BootstrapToken, "revokedAt" | "expiresAt" | "usagesCount" | "maxUsages">,
  now: number,
  ownerBanned: boolean,
): State =>
  token.revokedAt !== undefined
    ? "revoked"
    : now >= token.expiresAt
      ? "expired"
      : ownerBanned
        ? "disabled"
        : token.usagesCount >= token.maxUsages
          ? "exhausted"
          : "active"

export const PREFIX = "mesh-bt-"

/** A new secret and its id: the secret is 128 random bits. */
export const generate = (): { readonly id: string; readonly secret: string } => ({
  id: `bt_${randomBytes(8).toString("hex")}`,
  secret: `${PREFIX}${randomBytes(16).toString("hex")}`,
})

export const hash = (secret: string): Uint8Array => new Uint8Array(createHash("sha256").update(secret.trim()).digest())

export const DEFAULT_TTL_HOURS = 24
export const DEFAULT_MAX_USAGES = 1
export const MAX_TTL_HOURS = 24 * 366
export const MAX_USAGES = 100_000
/** Limits for tokens users mint for themselves. */
export const USER_MAX_TTL_HOURS = 24 * 7
export const USER_MAX_USAGES = 10

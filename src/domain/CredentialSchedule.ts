/**
 * When a router or node refreshes its credential. Three deadlines, the earliest wins:
 *
 * - lifetime: when a third of the credential's lifetime is left;
 * - key retirement: before the key that signed it retires (the key set says when), less a margin for retries;
 * - rotation: as soon as the key set holds a newer key, at a moment drawn once per new key from the first quarter of
 *   the time left before the old key retires, so a fleet that learns of a rotation together does not refresh in the
 *   same second, and three quarters of the grace period are left for retries.
 *
 * A credential whose key is no longer in the key set cannot be verified by anyone: it is due at once, and only a
 * control plane that grants autonomous recovery will trade it (else the member must enroll again).
 */
import type { PublicSigningKey } from "./KeySet.js"

export interface Held {
  readonly issuedAt: number
  readonly expiresAt: number
  /** The root key id of the credential; undefined when it cannot be read. */
  readonly keyId: number | undefined
}

/** A move to a newer key, planned once when the member first sees that key. */
export interface PlannedMove {
  readonly newestKeyId: number
  readonly at: number
}

export type Due =
  | { readonly _tag: "Lifetime"; readonly at: number }
  | { readonly _tag: "KeyRetiring"; readonly at: number; readonly retiresAt: number }
  | { readonly _tag: "KeyRotated"; readonly at: number; readonly retiresAt: number | undefined }
  | { readonly _tag: "KeyRetired"; readonly at: number; readonly keyId: number }

/** How much of the time before the old key retires the refreshes of a fleet are spread over. */
export const SPREAD_FRACTION = 0.25
/** Without a retirement time in the key set, a move to a new key is spread over at most this long. */
export const DEFAULT_SPREAD_MS = 60_000
/** Refresh at the latest this long before the credential's key retires (or a quarter of the time left, if less). */
export const RETIREMENT_MARGIN_MS = 5 * 60_000

/** The newest key of the set (the control plane signs new credentials with it). */
export const newestKey = (keys: ReadonlyArray<PublicSigningKey>): PublicSigningKey | undefined =>
  keys.reduce<PublicSigningKey | undefined>((best, k) => (best === undefined || k.id > best.id ? k : best), undefined)

/** Whether the set comes from a key-set sync (ids known), not only the first contact's key. */
const known = (keys: ReadonlyArray<PublicSigningKey>) => keys.some((k) => k.id >= 0)

/**
 * A move to plan now: the set holds a key newer than the credential's and no move to it is planned yet. `draw` is a
 * number in [0, 1) chosen by the caller (Effect's Random).
 */
export const planMove = (
  held: Held,
  keys: ReadonlyArray<PublicSigningKey>,
  planned: PlannedMove | undefined,
  now: number,
  draw: number,
): PlannedMove | undefined => {
  const newest = newestKey(keys)
  if (newest === undefined || held.keyId === undefined || !known(keys) || newest.id <= held.keyId) return undefined
  if (planned !== undefined && planned.newestKeyId === newest.id) return undefined
  const own = keys.find((k) => k.id === held.keyId)
  const window = own?.retiresAt === undefined ? DEFAULT_SPREAD_MS : Math.max(0, (own.retiresAt - now) * SPREAD_FRACTION)
  return { newestKeyId: newest.id, at: now + Math.floor(window * draw) }
}

/** The next refresh of the held credential, given the key set and a planned move. */
export const nextRefresh = (
  held: Held,
  keys: ReadonlyArray<PublicSigningKey>,
  planned: PlannedMove | undefined,
  now: number,
): Due => {
  const lifetime: Due = { _tag: "Lifetime", at: held.expiresAt - (held.expiresAt - held.issuedAt) / 3 }
  if (held.keyId === undefined || !known(keys)) return lifetime
  const own = keys.find((k) => k.id === held.keyId)
  if (own === undefined) return { _tag: "KeyRetired", at: now, keyId: held.keyId }
  const candidates: Array<Due> = [lifetime]
  if (own.retiresAt !== undefined) {
    const margin = Math.min(RETIREMENT_MARGIN_MS, Math.max(0, (own.retiresAt - now) / 4))
    candidates.push({ _tag: "KeyRetiring", at: own.retiresAt - margin, retiresAt: own.retiresAt })
  }
  const newest = newestKey(keys)
  if (planned !== undefined && newest !== undefined && newest.id > held.keyId && planned.newestKeyId === newest.id) {
    candidates.push({ _tag: "KeyRotated", at: planned.at, retiresAt: own.retiresAt })
  }
  return candidates.reduce((a, b) => (b.at < a.at ? b : a))
}

/** The longest pause between two attempts, and the pause once it is too late (nothing left to hurry for). */
export const MAX_RETRY_MS = 30_000

/**
 * Pause before retrying a failed refresh: an eighth of the time left before it is too late, within 1 s and 30 s; 30 s
 * once it is too late (a credential whose key retired or that expired), so a stranded member does not hammer the
 * control plane.
 */
export const retryDelay = (held: Held, keys: ReadonlyArray<PublicSigningKey>, now: number): number => {
  const own = keys.find((k) => k.id === held.keyId)
  const retired = held.keyId !== undefined && known(keys) && own === undefined
  const deadline = Math.min(held.expiresAt, own?.retiresAt ?? Number.POSITIVE_INFINITY)
  if (retired || deadline <= now) return MAX_RETRY_MS
  return Math.min(MAX_RETRY_MS, Math.max(1_000, (deadline - now) / 8))
}

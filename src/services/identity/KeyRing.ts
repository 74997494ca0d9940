/**
 * The control plane's signing keys. One key is current (new credentials are signed with it); a rotated-out key stays
 * live for the grace period, so credentials it signed keep verifying until their holders refresh. Keys live in the
 * database, shared by every replica; each replica serves them from memory.
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { SigningKeyPair } from "../../domain/KeySet.js"

export interface StoredKey extends SigningKeyPair {
  readonly createdAt: number
  /** Grace deadline of a rotated-out key; undefined for the current key. */
  readonly expiresAt: number | undefined
}

/** The keys as one replica knows them at one instant. */
export interface KeySnapshot {
  readonly current: StoredKey
  /** When the current key will retire: the next rotation's due time plus the grace period; none without rotation. */
  readonly currentRetiresAt: number | undefined
  /** The current key and those still in their grace period. */
  readonly live: ReadonlyArray<StoredKey>
  /** Raw public key of a live key id; undefined for an unknown or retired key. */
  readonly publicKeyFor: (id: number) => Uint8Array | undefined
}

export interface KeyRingService {
  readonly snapshot: Effect.Effect<KeySnapshot>
  /** The signed `GET /keys` body: from memory, re-signed when the set changes or the signature ages. */
  readonly keysBody: Effect.Effect<Uint8Array>
  /** Rotates now if this replica wins the rotation due at this instant; true when it rotated. */
  readonly rotateIfDue: Effect.Effect<boolean>
  /** Re-reads the keys from the database. */
  readonly reload: Effect.Effect<void>
  /** When the next rotation is due (unix ms), if rotation is enabled. */
  readonly nextRotation: Effect.Effect<Option.Option<number>>
  /** Rotations this replica performed, as they happen: the new current key and the one it replaced. */
  readonly rotations: Stream.Stream<{ readonly current: StoredKey; readonly previous: StoredKey | undefined }>
}

export class KeyRing extends Context.Tag("mesh/KeyRing")<KeyRing, KeyRingService>() {}

/** Pure rule: the keys live at `now`. */
export const liveAt = (keys: ReadonlyArray<StoredKey>, now: number): ReadonlyArray<StoredKey> =>
  keys.filter((k) => k.expiresAt === undefined || k.expiresAt > now)

/**
 * How the four durations of key rotation relate. A member learns of a new signing key from the `key_rotation` event
 * at once, or at its next key sync if the event was lost; it then refreshes at a moment drawn from the first quarter
 * of the grace period, and retries until the old key retires. So the grace period must cover one sync interval and
 * leave room for the spread and retries: at least GRACE_PER_SYNC sync intervals. A credential never outlives its key
 * (next rotation plus grace), so a longer credential lifetime is never used.
 */
import { Duration } from "effect"

/** Grace periods shorter than this many member sync intervals are refused. */
export const GRACE_PER_SYNC = 3
/** The node's default `--control-plane-sync-interval`, the longest default sync of any member. */
export const DEFAULT_MEMBER_SYNC = "15m"

export interface Durations {
  readonly keyRotationInterval: Duration.Duration
  readonly keyGracePeriod: Duration.Duration
  readonly biscuitTtl: Duration.Duration
  readonly memberSyncInterval: Duration.Duration
}

const text = (d: Duration.Duration) => Duration.format(d)

/** Why the control plane must not start with these durations, if it must not. */
export const refusal = (d: Durations): string | undefined => {
  if (Duration.toMillis(d.keyRotationInterval) <= 0) return undefined
  const needed = Duration.times(d.memberSyncInterval, GRACE_PER_SYNC)
  if (Duration.lessThan(d.keyGracePeriod, needed)) {
    return `--key-grace-period ${text(d.keyGracePeriod)} is shorter than ${GRACE_PER_SYNC} × --member-sync-interval (${text(d.memberSyncInterval)}): a member that misses the key_rotation event could not move to the new key before the old one retires. Raise the grace period to at least ${text(needed)}, or sync members more often and say so with --member-sync-interval`
  }
  return undefined
}

/** A setting that works but wastes something, if there is one. */
export const warning = (d: Durations): string | undefined => {
  if (Duration.toMillis(d.keyRotationInterval) <= 0) return undefined
  const longest = Duration.sum(d.keyRotationInterval, d.keyGracePeriod)
  if (Duration.greaterThan(d.biscuitTtl, longest)) {
    return `--biscuit-ttl ${text(d.biscuitTtl)} is longer than --key-rotation-interval plus --key-grace-period (${text(longest)}): credentials end when their signing key retires, so the rest is never used`
  }
  return undefined
}

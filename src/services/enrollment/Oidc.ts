/**
 * Verifies OIDC ID tokens from the configured issuers (`--issuer`) for the audiences in `--allowed-audiences`, and
 * reads the identity a node enrolls under. Failures are `Unauthorized` (the token is not acceptable) or `Unavailable`
 * (the issuer's discovery document or keys cannot be fetched right now); messages never quote the token or its claims.
 * Enrollment (`/register`), the user API and so the console's signed-in pages all verify through it.
 */
import { Context, type Effect } from "effect"
import type { Unauthorized, Unavailable } from "../../domain/Errors.js"
import type { Identity } from "../../domain/Node.js"

export interface VerifiedIdToken {
  readonly identity: Identity // issuer, subject, email (optional), groups
  readonly expiresAtMs: number // the token's exp, unix ms
}

/**
 * How an issuer's key set stands: `unread` until a token names the issuer, `fresh` within `--oidc-keys-max-age` of a
 * good read, `stale` once a read failed or the age is past (the keys still verify tokens), `expired` when stale for
 * too long (the keys are no longer used).
 */
export type IssuerKeysState = "unread" | "fresh" | "stale" | "expired"

export interface IssuerKeysStatus {
  /** As configured. */
  readonly issuer: string
  readonly state: IssuerKeysState
  /** The last good read of the keys, unix ms. */
  readonly readAtMs: number | undefined
  /** Why the last read failed, while none has succeeded since: short, safe to show. */
  readonly problem: string | undefined
}

export interface OidcService {
  /** Verifies an ID token from one of the configured issuers, audience in --allowed-audiences. */
  readonly verify: (idToken: string) => Effect.Effect<VerifiedIdToken, Unauthorized | Unavailable>
  /** Each configured issuer's key set, for readiness. */
  readonly keys: Effect.Effect<ReadonlyArray<IssuerKeysStatus>>
}

export class Oidc extends Context.Tag("mesh/Oidc")<Oidc, OidcService>() {}

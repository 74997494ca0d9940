/**
 * Verifies OIDC ID tokens from the configured issuers (`--issuer`) for the audiences in `--allowed-audiences`, and
 * reads the identity a node enrolls under. Failures are `Unauthorized` (the token is not acceptable) or `Unavailable`
 * (the issuer's discovery document or keys cannot be fetched right now); messages never quote the token or its claims.
 */
import { Context, type Effect } from "effect"
import type { Unauthorized, Unavailable } from "../../domain/Errors.js"
import type { Identity } from "../../domain/Node.js"

export interface VerifiedIdToken {
  readonly identity: Identity // issuer, subject, email (optional), groups
  readonly expiresAtMs: number // the token's exp, unix ms
}

export interface OidcService {
  /** Verifies an ID token from one of the configured issuers, audience in --allowed-audiences. */
  readonly verify: (idToken: string) => Effect.Effect<VerifiedIdToken, Unauthorized | Unavailable>
}

export class Oidc extends Context.Tag("mesh/Oidc")<Oidc, OidcService>() {}

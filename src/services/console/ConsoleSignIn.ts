/**
 * Sign-in to the operator console with the configured OIDC issuer (the first `--issuer`): the authorization code flow
 * with PKCE runs in the browser, and the control plane does the two steps the browser cannot do under the console's
 * self-only Content-Security-Policy: reading the issuer's discovery document, and trading the code for an ID token at
 * the issuer's token endpoint. The control plane keeps nothing: the ID token goes back to the browser, which holds it
 * in memory and presents it to the user API like any other client.
 */
import { Context, type Effect } from "effect"
import type { Unauthorized, Unavailable } from "../../domain/Errors.js"

export interface SignInOptions {
  readonly issuer: string
  /** The OAuth client id the console signs in as (`--oidc-client-id`). */
  readonly clientId: string
  readonly authorizationEndpoint: string
  readonly scope: string
}

export interface CodeExchange {
  readonly code: string
  readonly codeVerifier: string
  /** Must be the redirect URI the authorization request named; the issuer checks it. */
  readonly redirectUri: string
}

export interface ConsoleSignInService {
  /** Where the browser sends the user; `Unavailable` while the issuer's discovery document cannot be read. */
  readonly options: Effect.Effect<SignInOptions, Unavailable>
  /** The ID token for an authorization code; `Unauthorized` when the issuer refuses the code. */
  readonly exchange: (request: CodeExchange) => Effect.Effect<string, Unauthorized | Unavailable>
}

export class ConsoleSignIn extends Context.Tag("mesh/ConsoleSignIn")<ConsoleSignIn, ConsoleSignInService>() {}

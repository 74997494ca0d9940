/**
 * User sign-in: the OAuth authorization code flow with PKCE against the control plane's issuer. The browser goes to
 * the issuer and comes back to `/console?code=…&state=…`; the control plane trades the code for an ID token (the
 * console's policy lets the page talk to its own origin only). Across that round trip the state, nonce and PKCE
 * verifier wait in sessionStorage (this tab only) and are removed as soon as the page is back; the ID token itself
 * lives in memory only.
 */
import type { Client } from "./api.js"

const PENDING = "mesh-console-sign-in"

export interface SignedIn {
  readonly idToken: string
  readonly subject: string
  readonly email: string | undefined
  /** Unix ms. */
  readonly expiresAt: number
}

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")

const random = (size: number): string => base64url(crypto.getRandomValues(new Uint8Array(size)))

const challengeOf = async (verifier: string): Promise<string> =>
  base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))))

export const redirectUri = (): string => `${location.origin}/console`

/** Sends the browser to the issuer. */
export const start = async (client: Client): Promise<void> => {
  const options = await client.call("console", "signInOptions", {})
  const pending = { state: random(24), nonce: random(24), verifier: random(48) }
  sessionStorage.setItem(PENDING, JSON.stringify(pending))
  const target = new URL(options.authorization_endpoint)
  target.searchParams.set("response_type", "code")
  target.searchParams.set("client_id", options.client_id)
  target.searchParams.set("redirect_uri", redirectUri())
  target.searchParams.set("scope", options.scope)
  target.searchParams.set("state", pending.state)
  target.searchParams.set("nonce", pending.nonce)
  target.searchParams.set("code_challenge", await challengeOf(pending.verifier))
  target.searchParams.set("code_challenge_method", "S256")
  location.assign(target.toString())
}

const claimsOf = (idToken: string): Readonly<Record<string, unknown>> => {
  const payload = idToken.split(".")[1] ?? ""
  const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"))
  const bytes = Uint8Array.from(json, (c) => c.charCodeAt(0))
  return JSON.parse(new TextDecoder().decode(bytes)) as Readonly<Record<string, unknown>>
}

/**
 * Finishes a sign-in when the page is the issuer's redirect back: undefined when it is not, the user when it worked;
 * throws an Error in words otherwise. The code leaves the address bar at once either way.
 */
export const complete = async (client: Client): Promise<SignedIn | undefined> => {
  const params = new URLSearchParams(location.search)
  const code = params.get("code")
  const issuerError = params.get("error")
  if (code === null && issuerError === null) return undefined
  history.replaceState(null, "", "/console")
  const stored = sessionStorage.getItem(PENDING)
  sessionStorage.removeItem(PENDING)
  if (issuerError !== null) {
    throw new Error(`The issuer did not sign you in: ${params.get("error_description") ?? issuerError}.`)
  }
  const pending =
    stored === null ? undefined : (JSON.parse(stored) as { state: string; nonce: string; verifier: string })
  if (pending === undefined || pending.state !== params.get("state")) {
    throw new Error("This sign-in was not started from this tab, or it was already used. Sign in again.")
  }
  const { id_token } = await client.call("console", "signIn", {
    payload: { code: code ?? "", code_verifier: pending.verifier, redirect_uri: redirectUri() },
  })
  const claims = claimsOf(id_token)
  if (claims.nonce !== pending.nonce) throw new Error("The issuer's answer does not belong to this sign-in.")
  return {
    idToken: id_token,
    subject: String(claims.sub ?? ""),
    email: typeof claims.email === "string" ? claims.email : undefined,
    expiresAt: typeof claims.exp === "number" ? claims.exp * 1000 : Date.now() + 3_600_000,
  }
}

/**
 * What a local caller presented, and what it admits before any agent token is checked: one pure rule for the
 * middleware and the front (Front.ts), so the two can never disagree on who is let in. Checking an agent token
 * needs the node's keys and stays with the middleware; the front declines such requests.
 */
import { Forbidden, Unauthorized } from "../domain/Errors.js"
import type * as Route from "./Route.js"

export const BEARER = /^Bearer\s+(\S+)\s*$/i

/** Long enough to be a biscuit: an API token never is one, and the agent check costs a parse. */
export const looksLikeAgentToken = (token: string) => token.length > 200

export type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

export type Admission<H extends Headers = Headers> =
  /** The API token, or a trusted listener with no agent token: the headers to pass on, the API token removed. */
  | { readonly _tag: "Admitted"; readonly headers: H }
  /**
   * What may be an agent token, for the caller to check. `headers` has `X-Mesh-Authentication` removed; when the
   * token came in `Authorization` and is taken as the agent's, that goes too (`withoutAgentToken`).
   */
  | {
      readonly _tag: "Agent"
      readonly token: string
      readonly header: "authorization" | "x-mesh-authentication"
      readonly headers: H
    }
  | { readonly _tag: "Refused"; readonly error: Unauthorized | Forbidden }

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : undefined

/**
 * For a route that is not open. On a forwarding route `Authorization` is the service's, and the API token travels
 * only in `X-Mesh-Authentication`; whether a `strong` route's listener is strong enough is the caller's to check.
 */
export const admit = <H extends Headers>(
  headers: H,
  access: Exclude<Route.Access, "open">,
  trusted: boolean,
  isApiToken: (token: string) => boolean,
): Admission<H> => {
  const own = headers["x-mesh-authentication"]
  const authorization = single(headers.authorization)
  // A copy of the caller's headers; the type keeps what the caller's header type carries beside the fields.
  const passed: Record<string, unknown> = { ...headers }
  // Never forward the API token, whichever header carried it and whether or not this caller needed it.
  delete passed["x-mesh-authentication"]
  const bearer = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1]
  const bearerIsApi = bearer !== undefined && isApiToken(bearer)
  if (bearerIsApi) delete passed.authorization

  let presented: { readonly token: string; readonly header: "authorization" | "x-mesh-authentication" } | undefined
  if (own !== undefined) {
    const token = typeof own === "string" ? BEARER.exec(own)?.[1] : undefined
    if (token === undefined) {
      return trusted
        ? { _tag: "Admitted", headers: passed as H }
        : { _tag: "Refused", error: new Unauthorized({ message: "X-Mesh-Authentication must be Bearer <token>" }) }
    }
    presented = { token, header: "x-mesh-authentication" }
  } else if (access !== "forwarding" && bearer !== undefined) {
    presented = { token: bearer, header: "authorization" }
  }

  // Each token is compared once: the bearer's answer stands for it when it is the one presented.
  const presentedIsApi =
    presented !== undefined && (presented.header === "authorization" ? bearerIsApi : isApiToken(presented.token))
  if (presented !== undefined && !presentedIsApi && looksLikeAgentToken(presented.token)) {
    return { _tag: "Agent", ...presented, headers: passed as H }
  }
  if (trusted) return { _tag: "Admitted", headers: passed as H }
  if (presented === undefined) {
    return {
      _tag: "Refused",
      error: new Unauthorized({
        message:
          access === "forwarding"
            ? "missing API token: send X-Mesh-Authentication: Bearer <token> (Authorization is passed to the service)"
            : "missing API token: send X-Mesh-Authentication: Bearer <token>",
      }),
    }
  }
  if (!presentedIsApi) return { _tag: "Refused", error: new Forbidden({ message: "wrong API token" }) }
  return { _tag: "Admitted", headers: passed as H }
}

/** The headers of an `Agent` admission once its token is taken as the agent's: one in `Authorization` goes too. */
export const withoutAgentToken = <H extends Headers>(admission: Extract<Admission<H>, { _tag: "Agent" }>): H => {
  if (admission.header !== "authorization") return admission.headers
  const headers: Record<string, unknown> = { ...admission.headers }
  delete headers.authorization
  return headers as H
}

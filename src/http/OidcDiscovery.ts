/**
 * An OIDC issuer's discovery document (`/.well-known/openid-configuration`), read for the fields a caller needs and
 * checked to name the issuer asked: the key reader wants `jwks_uri`, the console's sign-in its endpoints.
 */
import { Effect, Schema } from "effect"
import * as HttpGet from "./HttpGet.js"

/** An issuer identifier without its trailing slash: `https://idp/` and `https://idp` name one issuer. */
export const withoutSlash = (url: string): string => (url.endsWith("/") ? url.slice(0, -1) : url)

/**
 * The document of `issuer`, decoded with `fields`; fails with a short reason safe to show (`discovery document: ...`),
 * `missing` when the fields are not there.
 */
export const read = <A extends { readonly issuer: string }, I>(
  issuer: string,
  fields: Schema.Schema<A, I>,
  missing: string,
  http: HttpGet.Options,
): Effect.Effect<A, string> =>
  Effect.gen(function* () {
    const problem = (reason: string) => `discovery document: ${reason}`
    const json = yield* HttpGet.getJson(`${withoutSlash(issuer)}/.well-known/openid-configuration`, http).pipe(
      Effect.mapError((error) => problem(error.reason)),
    )
    const document = yield* Schema.decodeUnknown(fields)(json).pipe(Effect.mapError(() => problem(missing)))
    if (withoutSlash(document.issuer) !== withoutSlash(issuer)) {
      return yield* Effect.fail(problem("it names another issuer"))
    }
    return document
  })

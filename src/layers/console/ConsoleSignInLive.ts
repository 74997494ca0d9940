/**
 * ConsoleSignIn over the first configured issuer: its discovery document is read on first use and kept once read (a
 * failed read is not kept: the next sign-in tries again); codes are traded at its token endpoint as a public client
 * (no secret: PKCE binds the code to the browser that asked for it).
 */
import { Effect, Layer, Option, Schema, SynchronizedRef } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { Unauthorized, Unavailable } from "../../domain/Errors.js"
import * as HttpGet from "../../http/HttpGet.js"
import * as OidcDiscovery from "../../http/OidcDiscovery.js"
import { ConsoleSignIn, type SignInOptions } from "../../services/console/ConsoleSignIn.js"

const Discovery = Schema.Struct({
  issuer: Schema.String,
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
})
type Discovery = typeof Discovery.Type

const TokenAnswer = Schema.Struct({ id_token: Schema.String.pipe(Schema.minLength(1)) })

/** `openid` for the ID token; `email` and `profile` so the console can say who is signed in. */
const SCOPE = "openid email profile"

export const layer = Layer.effect(
  ConsoleSignIn,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const issuer = config.issuers[0] ?? ""
    const http = { insecureSkipTlsVerify: config.insecureSkipTlsVerify }
    const unavailable = (what: string) => (error: HttpGet.HttpGetError | string) =>
      new Unavailable({
        message: `OIDC issuer ${issuer} is unavailable: ${what}: ${typeof error === "string" ? error : error.reason}`,
      })

    const load = OidcDiscovery.read(issuer, Discovery, "authorization or token endpoint missing", http).pipe(
      Effect.mapError((problem) => new Unavailable({ message: `OIDC issuer ${issuer} is unavailable: ${problem}` })),
      Effect.tapError((error) => Effect.logWarning(error.message)),
    )

    const cache = yield* SynchronizedRef.make<Option.Option<Discovery>>(Option.none())
    const discovery = SynchronizedRef.modifyEffect(cache, (cached) =>
      Option.match(cached, {
        onSome: (d) => Effect.succeed([d, cached] as const),
        onNone: () => Effect.map(load, (d) => [d, Option.some(d)] as const),
      }),
    )

    return {
      options: Effect.map(
        discovery,
        (d): SignInOptions => ({
          issuer,
          clientId: config.oidcClientId,
          authorizationEndpoint: d.authorization_endpoint,
          scope: SCOPE,
        }),
      ),
      exchange: (request) =>
        Effect.gen(function* () {
          const { token_endpoint } = yield* discovery
          const answer = yield* HttpGet.postForm(
            token_endpoint,
            {
              grant_type: "authorization_code",
              code: request.code,
              code_verifier: request.codeVerifier,
              redirect_uri: request.redirectUri,
              client_id: config.oidcClientId,
            },
            http,
          ).pipe(
            // A 4xx is the issuer's verdict on the code (used, expired, wrong verifier); anything else is an outage.
            Effect.mapError((error) =>
              error.status !== undefined && error.status >= 400 && error.status < 500
                ? new Unauthorized({ message: `the issuer did not accept the sign-in code (${error.reason})` })
                : unavailable("token endpoint")(error),
            ),
          )
          const { id_token } = yield* Schema.decodeUnknown(TokenAnswer)(answer).pipe(
            Effect.mapError(() => unavailable("token endpoint")("the answer holds no ID token")),
          )
          return id_token
        }),
    }
  }),
)

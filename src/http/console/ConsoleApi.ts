/**
 * The operator console (`/console`, built from `console/` into static files), the description of the JSON API
 * (`/openapi.json`), and the two sign-in steps the console's OIDC flow needs from the control plane. The page, its
 * files and the description itself are left out of the description; the sign-in routes are in it.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { BadRequest, NotFound, Unauthorized, Unavailable } from "../../domain/Errors.js"

const file = HttpApiSchema.param("file", Schema.String)

export const SignInOptionsView = Schema.Struct({
  issuer: Schema.String,
  client_id: Schema.String,
  authorization_endpoint: Schema.String,
  scope: Schema.String,
})

export const CodeExchangeBody = Schema.Struct({
  code: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4096)),
  code_verifier: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9._~-]{43,128}$/)),
  redirect_uri: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)),
})

export const SignedInView = Schema.Struct({ id_token: Schema.String })

export class ConsoleApi extends HttpApiGroup.make("console")
  .add(HttpApiEndpoint.get("openApi", "/openapi.json").addSuccess(Schema.Unknown).annotate(OpenApi.Exclude, true))
  .add(
    HttpApiEndpoint.get("page", "/console")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html" }))
      .addError(NotFound)
      .annotate(OpenApi.Exclude, true),
  )
  .add(
    HttpApiEndpoint.get("asset")`/console/assets/${file}`
      .addSuccess(HttpApiSchema.Uint8Array())
      .addError(NotFound)
      .annotate(OpenApi.Exclude, true),
  )
  .add(
    HttpApiEndpoint.get("signInOptions", "/console/sign-in")
      .addSuccess(SignInOptionsView)
      .addError(Unavailable)
      .annotate(OpenApi.Description, "Where the console sends a user to sign in: the first configured issuer."),
  )
  .add(
    HttpApiEndpoint.post("signIn", "/console/sign-in/token")
      .setPayload(CodeExchangeBody)
      .addSuccess(SignedInView)
      .addError(BadRequest)
      .addError(Unauthorized)
      .addError(Unavailable)
      .annotate(
        OpenApi.Description,
        "Trades an authorization code (with its PKCE verifier) for an ID token at the issuer's token endpoint.",
      ),
  ) {}

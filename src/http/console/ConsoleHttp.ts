/** Handlers of the console group: the page and its files, the API description, and the sign-in steps. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Option } from "effect"
import { NotFound } from "../../domain/Errors.js"
import { ConsoleSignIn } from "../../services/console/ConsoleSignIn.js"
import { ControlPlaneApi } from "../Api.js"
import * as OpenApiDocument from "../OpenApiDocument.js"
import * as Assets from "./Assets.js"

const notBuilt = new NotFound({ message: "the console is not built into this installation (npm run build)" })

export const ConsoleHttpLive = HttpApiBuilder.group(ControlPlaneApi, "console", (handlers) =>
  Effect.gen(function* () {
    const signIn = yield* ConsoleSignIn
    // Both are made on first use, not here: the server already listens while handlers are built, and a request
    // arriving before they are installed waits unanswered, so nothing slow may happen in this window.
    const loadFiles = yield* Effect.cached(Assets.load())
    const describeApi = yield* Effect.cached(Effect.sync(() => HttpServerResponse.unsafeJson(OpenApiDocument.make())))

    return handlers
      .handle("openApi", () => describeApi)
      .handle("page", () =>
        Effect.flatMap(loadFiles, (files) =>
          Option.match(files, {
            onNone: () => Effect.fail(notBuilt),
            onSome: ({ page }) =>
              Effect.succeed(
                HttpServerResponse.uint8Array(page, {
                  contentType: "text/html; charset=utf-8",
                  // The page names the current files: always ask again.
                  headers: { ...Assets.SECURITY_HEADERS, "cache-control": "no-cache" },
                }),
              ),
          }),
        ),
      )
      .handle("asset", ({ path }) =>
        Effect.flatMap(loadFiles, (files) => {
          const body = Option.flatMap(files, ({ assets }) => Option.fromNullable(assets.get(path.file)))
          const contentType = Assets.contentTypeOf(path.file)
          if (Option.isNone(body) || contentType === undefined) {
            return Effect.fail(Option.isNone(files) ? notBuilt : new NotFound({ message: "no such console file" }))
          }
          return Effect.succeed(
            HttpServerResponse.uint8Array(body.value, {
              contentType,
              headers: {
                ...Assets.SECURITY_HEADERS,
                "cache-control": Assets.isImmutable(path.file) ? "public, max-age=31536000, immutable" : "no-cache",
              },
            }),
          )
        }),
      )
      .handle("signInOptions", () =>
        Effect.map(signIn.options, (o) => ({
          issuer: o.issuer,
          client_id: o.clientId,
          authorization_endpoint: o.authorizationEndpoint,
          scope: o.scope,
        })),
      )
      .handle("signIn", ({ payload }) =>
        Effect.map(
          signIn.exchange({
            code: payload.code,
            codeVerifier: payload.code_verifier,
            redirectUri: payload.redirect_uri,
          }),
          // An ID token: never cached.
          (idToken) =>
            HttpServerResponse.unsafeJson({ id_token: idToken }, { headers: { "cache-control": "no-store" } }),
        ),
      )
  }),
)

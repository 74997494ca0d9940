/** Reads the `Authorization: Bearer <token>` header. */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Either, Option } from "effect"
import * as Biscuit from "../crypto/Biscuit.js"
import { Unauthorized } from "../domain/Errors.js"

const PREFIX = /^Bearer\s+/i

/** The bearer token text, if the request has one. */
export const token = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const header = request.headers.authorization
  if (header === undefined || !PREFIX.test(header)) return Option.none<string>()
  const value = header.replace(PREFIX, "").trim()
  return value.length === 0 ? Option.none<string>() : Option.some(value)
})

/** The credential presented as bearer, as bytes; 401 when absent or not base64. */
export const credential = Effect.flatMap(token, (value) =>
  Option.match(value, {
    onNone: () => Effect.fail(new Unauthorized({ message: "a credential is required as Authorization: Bearer" })),
    onSome: (text) =>
      Either.match(Biscuit.fromText(text), {
        onLeft: (message) => Effect.fail(new Unauthorized({ message })),
        onRight: Effect.succeed,
      }),
  }),
)

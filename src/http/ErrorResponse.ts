/**
 * The one place where failures become HTTP responses. Every route, whatever failed, answers with
 *
 *   { "error": "<code>", "message": "<text>" }
 *
 * Domain errors carry their status; request decoding failures and text the database refuses (NUL) are 400; an
 * unreachable database is 503; anything else is a defect: logged with its cause, answered 500 with a generic
 * message so nothing internal leaks.
 */

import type { ServerResponse } from "node:http"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Option, type Schema } from "effect"
import { type ApiError, ApiErrors, MethodNotAllowed, NoAvailableProvider, RateLimited } from "../domain/Errors.js"
import * as NulText from "../domain/NulText.js"

export interface ErrorBody {
  readonly error: string
  readonly message: string
}

const snakeCase = (tag: string): string => tag.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()

/** Turns a failure's status, stable code and message into a response (some routes speak another error dialect). */
export type Renderer = (
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>,
) => HttpServerResponse.HttpServerResponse

export const body: Renderer = (status, code, message, headers) =>
  HttpServerResponse.unsafeJson({ error: code, message } satisfies ErrorBody, {
    status,
    headers: { "cache-control": "no-store", ...headers },
  })

const isApiError = (u: unknown): u is ApiError => ApiErrors.some((cls) => u instanceof cls)

/** The status and body of a domain error, for handlers that write the Node response themselves. */
export const parts = (error: ApiError): { readonly status: number; readonly body: ErrorBody } => ({
  status: HttpApiSchema.getStatusError(error.constructor as unknown as Schema.Schema.All),
  body: { error: snakeCase(error._tag), message: error.message },
})

/** The headers a domain error's answer carries: when to try again, or the methods allowed. */
export const headersOf = (error: ApiError): Record<string, string> | undefined =>
  error instanceof RateLimited || error instanceof NoAvailableProvider
    ? { "retry-after": String(Math.max(1, Math.ceil(error.retryAfterSeconds))) }
    : error instanceof MethodNotAllowed
      ? { allow: error.allow.join(", ") }
      : undefined

/** The body a route's error dialect gives a status, stable code and message (the house's `ErrorBody` by default). */
export type Shape = (status: number, code: string, message: string) => unknown

const houseShape: Shape = (_status, code, message) => ({ error: code, message }) satisfies ErrorBody

/**
 * The same answer written on a Node response, for handlers that write it themselves (the proxy, the front's fast
 * answers). An answer under way cannot turn into an error: it is cut, which the client sees.
 */
export const write = (
  res: ServerResponse,
  error: ApiError,
  options?: { readonly shape?: Shape; readonly headers?: Record<string, string> },
): void => {
  if (res.headersSent) return void res.destroy(new Error(error.message))
  const { status, body } = parts(error)
  const text = JSON.stringify((options?.shape ?? houseShape)(status, body.error, body.message))
  res.writeHead(status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
    ...headersOf(error),
    ...options?.headers,
  })
  res.end(text)
}

export const fromApiError = (error: ApiError, render: Renderer = body): HttpServerResponse.HttpServerResponse => {
  const status = HttpApiSchema.getStatusError(error.constructor as unknown as Schema.Schema.All)
  return render(status, snakeCase(error._tag), error.message, headersOf(error))
}

/** Names the offending fields only: decode messages may quote the input, which can be a secret. */
const decodeMessage = (error: HttpApiDecodeError): string => {
  const paths = [...new Set(error.issues.map((issue) => issue.path.join(".")).filter((p) => p.length > 0))]
  return paths.length > 0 ? `invalid request: ${paths.join(", ")}` : "invalid request"
}

/** Connection-level database failures: the server is down, restarting or unreachable, or sqlite is locked. */
const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "57P01",
  "57P02",
  "57P03",
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
])

export const isDatabaseUnavailable = (error: SqlError): boolean => {
  let cause: unknown = error.cause
  for (let depth = 0; depth < 4 && typeof cause === "object" && cause !== null; depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === "string" && (UNAVAILABLE_CODES.has(code) || code.startsWith("08"))) return true
    const message = (cause as { message?: unknown }).message
    if (
      typeof message === "string" &&
      /Connection terminated|timeout exceeded when trying to connect|Connection timed out|not queryable/i.test(message)
    )
      return true
    cause = (cause as { cause?: unknown }).cause
  }
  return error.message.includes("Failed to acquire connection") || error.message.includes("Connection error")
}

/** sqlite's busy timeout ran out: another process holds the write lock. */
const isLocked = (error: SqlError): boolean => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED"
}

const requestErrorResponse = (error: HttpServerError.RequestError, render: Renderer) => {
  const text = String((error.cause as { message?: unknown } | undefined)?.message ?? "")
  return /max(imum)? ?bytes|too large/i.test(text)
    ? render(413, "payload_too_large", "request body too large")
    : render(400, "bad_request", "malformed request body")
}

/** Renders a failed request (with the one error body unless told otherwise). Never fails. */
export const fromCause = (
  cause: Cause.Cause<unknown>,
  render: Renderer = body,
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const failure = Cause.failureOption(cause)
  const error = Option.isSome(failure) ? failure.value : Option.getOrUndefined(Cause.dieOption(cause))
  if (error === undefined && Cause.isInterruptedOnly(cause)) {
    // The client went away; nobody reads this answer.
    return Effect.succeed(HttpServerResponse.empty({ status: 499 }))
  }
  if (isApiError(error)) return Effect.succeed(fromApiError(error, render))
  if (error instanceof HttpApiDecodeError) return Effect.succeed(render(400, "bad_request", decodeMessage(error)))
  if (HttpServerError.isServerError(error)) {
    if (error._tag === "RouteNotFound") return Effect.succeed(render(404, "not_found", "no such route"))
    if (error._tag === "RequestError") return Effect.succeed(requestErrorResponse(error, render))
  }
  // Any database failure in the cause decides, not only the first: a lost connection often surfaces twice.
  const sqlErrors = [...Cause.failures(cause), ...Cause.defects(cause)].filter((e) => e instanceof SqlError)
  if (sqlErrors.some(NulText.isNulInText)) {
    return Effect.succeed(render(400, "bad_request", "invalid request: text must not contain NUL (U+0000)"))
  }
  const unavailable = sqlErrors.find(isDatabaseUnavailable)
  if (unavailable !== undefined) {
    const message = isLocked(unavailable) ? "database is locked by another writer" : "database unavailable"
    return Effect.as(
      Effect.logWarning(message, unavailable.message),
      render(503, "unavailable", message, { "retry-after": "1" }),
    )
  }
  return Effect.as(Effect.logError("request failed", cause), render(500, "internal", "internal error"))
}

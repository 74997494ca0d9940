/**
 * Errors under `/v1/*` in OpenAI's shape, which OpenAI SDKs read (`error.message`, `error.type`, `error.code`):
 *
 *   { "error": { "message": "<text>", "type": "<kind>", "param": null, "code": "<code>" } }
 *
 * `code` is the same stable snake_case code the rest of the API puts in its error body; `type` is OpenAI's kind of
 * error for the status. The status is what the SDKs map to their error classes (404 is `NotFoundError`).
 */
import type { ServerResponse } from "node:http"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { ApiError } from "../../domain/Errors.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"

export interface OpenAiErrorBody {
  readonly error: {
    readonly message: string
    readonly type: string
    readonly param: string | null
    readonly code: string
  }
}

const typeOf = (status: number): string =>
  status === 401
    ? "authentication_error"
    : status === 403
      ? "permission_error"
      : status === 429
        ? "rate_limit_error"
        : status >= 500
          ? "server_error"
          : "invalid_request_error"

export const body = (status: number, code: string, message: string): OpenAiErrorBody => ({
  error: { message, type: typeOf(status), param: null, code },
})

export const render: ErrorResponse.Renderer = (status, code, message, headers) =>
  HttpServerResponse.unsafeJson(body(status, code, message), {
    status,
    headers: { "cache-control": "no-store", ...headers },
  })

/** The same answer written on a Node response, for handlers that write it themselves. */
export const write = (res: ServerResponse, error: ApiError, headers?: Record<string, string>): void =>
  ErrorResponse.write(res, error, { shape: body, ...(headers === undefined ? {} : { headers }) })

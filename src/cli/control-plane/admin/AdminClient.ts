/**
 * The operator commands' side of the admin API: the connection flags every such command takes, and one request
 * function that turns what can go wrong into one line naming the control plane (unreachable and why, the admin
 * token refused, the server's own error message).
 */
import * as Options from "@effect/cli/Options"
import { Data, Effect, Option, Redacted } from "effect"
import * as Flag from "../../flags.js"
import { UsageError } from "../../run.js"

/** A failure of the admin API call, said in one line (exit 1). */
export class AdminApiError extends Data.TaggedError("AdminApiError")<{ readonly message: string }> {}

export const connection = {
  controlPlane: Flag.optionalText("control-plane", {
    env: "MESH_CONTROL_PLANE",
    description: "URL of the control plane whose admin API to call, e.g. https://mesh.example.com. Required.",
  }),
  adminTokenPath: Flag.optionalText("admin-token-path", {
    env: "MESH_ADMIN_TOKEN_PATH",
    description:
      "File holding the control plane's admin token (the file its --admin-token-path names); else the token itself from MESH_ADMIN_TOKEN. Required.",
  }),
  json: Options.boolean("json").pipe(
    Options.withDescription("Print the control plane's JSON answer as it came, instead of text for people."),
  ),
}

export interface Connection {
  readonly url: string
  readonly token: Redacted.Redacted<string>
  /** Where the token came from, for the message when it is refused. */
  readonly tokenSource: string
  readonly json: boolean
}

/** How long one call may take before it is given up. */
const TIMEOUT_MS = 30_000

export const connect = (flags: {
  readonly controlPlane: Option.Option<string>
  readonly adminTokenPath: Option.Option<string>
  readonly json: boolean
}): Effect.Effect<Connection, UsageError> =>
  Effect.gen(function* () {
    if (Option.isNone(flags.controlPlane)) {
      return yield* new UsageError({ message: "--control-plane is required (or MESH_CONTROL_PLANE)" })
    }
    const raw = flags.controlPlane.value.trim()
    const parsed = URL.canParse(raw) ? new URL(raw) : undefined
    if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      return yield* new UsageError({ message: `--control-plane: "${raw}" is not an http:// or https:// URL` })
    }
    const token = yield* Flag.readSecret(flags.adminTokenPath, "MESH_ADMIN_TOKEN")
    if (Option.isNone(token)) {
      return yield* new UsageError({ message: "--admin-token-path is required (or MESH_ADMIN_TOKEN)" })
    }
    return {
      url: raw.replace(/\/+$/, ""),
      token: token.value,
      tokenSource: Option.getOrElse(flags.adminTokenPath, () => "MESH_ADMIN_TOKEN"),
      json: flags.json,
    }
  })

export interface Answer {
  readonly status: number
  readonly text: string
  readonly json: unknown
}

/** The reason a fetch failed, from its cause chain: `connect ECONNREFUSED 127.0.0.1:1`, `getaddrinfo ENOTFOUND x`. */
const reasonOf = (error: unknown): string => {
  if (error instanceof Error && error.name === "TimeoutError") return `no answer within ${TIMEOUT_MS / 1000} s`
  let current: unknown = error
  let reason = error instanceof Error ? error.message : String(error)
  while (current instanceof Error && current.cause !== undefined) {
    current = current.cause
    if (current instanceof Error && current.message.length > 0) reason = current.message
  }
  return reason.split("\n")[0] ?? "failed"
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The server's error body (`{error, message}`), or the status when the body is something else. */
export const errorText = (answer: Answer): string => {
  const body = answer.json as { error?: unknown; message?: unknown } | undefined
  return typeof body?.message === "string" ? body.message : `HTTP ${answer.status}`
}

/** One call to the admin API: every answer is returned but a refused admin token; an unreachable server fails. */
export const send = (
  connection: Connection,
  method: string,
  path: string,
  options: { readonly body?: string; readonly contentType?: string } = {},
): Effect.Effect<Answer, AdminApiError> =>
  Effect.gen(function* () {
    const response = yield* Effect.tryPromise({
      try: (signal) =>
        fetch(`${connection.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${Redacted.value(connection.token)}`,
            accept: "application/json",
            ...(options.body === undefined ? {} : { "content-type": options.contentType ?? "application/json" }),
          },
          ...(options.body === undefined ? {} : { body: options.body }),
          signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)]),
        }).then(async (r) => ({ status: r.status, text: await r.text() })),
      catch: (error) =>
        new AdminApiError({ message: `cannot reach the control plane at ${connection.url}: ${reasonOf(error)}` }),
    })
    const answer: Answer = { ...response, json: parse(response.text) }
    if (answer.status === 401) {
      return yield* new AdminApiError({
        message: `the control plane at ${connection.url} refused the admin token from ${connection.tokenSource}: ${errorText(answer)}`,
      })
    }
    return answer
  })

/** One call to the admin API whose answer must be a success; any other answer fails with the server's message. */
export const request = (
  connection: Connection,
  method: string,
  path: string,
  options: { readonly body?: string; readonly contentType?: string } = {},
): Effect.Effect<Answer, AdminApiError> =>
  Effect.filterOrFail(
    send(connection, method, path, options),
    (answer) => answer.status >= 200 && answer.status < 300,
    (answer) => new AdminApiError({ message: `${method} ${path}: ${errorText(answer)} (${answer.status})` }),
  )

/** A JSON body for a request. */
export const json = (value: unknown): { readonly body: string } => ({ body: JSON.stringify(value) })

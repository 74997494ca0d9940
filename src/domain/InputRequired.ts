/**
 * An `input_required` result from a peer's modern MCP server (spec 2026-07-28, patterns/mrtr), checked before it goes
 * any further: a hostile server must not hand the agent an unbounded list of requests or an unbounded state to carry.
 * At most MAX_REQUESTS requests, keys of sane length, each an elicitation, a sampling or a roots listing, and a
 * `requestState` of at most MAX_STATE_CHARS. A retry carries at most MAX_REQUESTS answers of MAX_ANSWER_BYTES in all
 * (as JSON), and a call is retried at most MAX_ROUNDS times.
 */
import { Either, Schema } from "effect"

export const MAX_REQUESTS = 16
export const MAX_STATE_CHARS = 64 * 1024
export const MAX_ANSWER_BYTES = 256 * 1024
export const MAX_ROUNDS = 8
const MAX_KEY = 128

/**
 * The client capabilities a modern call declares by default: an input request of either kind can be carried back to
 * the agent (call_remote_tool presents it, the gateway in the agent's own era), so the server may ask for it.
 */
export const RELAYED_CAPABILITIES: Readonly<Record<string, unknown>> = { elicitation: { form: {} }, sampling: {} }

/** The requests a server may embed: what a 2025-era server would have sent as requests of its own. */
export const METHODS: ReadonlySet<string> = new Set(["elicitation/create", "sampling/createMessage", "roots/list"])

const Request = Schema.Struct({
  method: Schema.String,
  params: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})

const Result = Schema.Struct({
  resultType: Schema.Literal("input_required"),
  inputRequests: Schema.optional(Schema.Record({ key: Schema.String, value: Request })),
  requestState: Schema.optional(Schema.String),
  _meta: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})

export type Checked = typeof Result.Type

/** The result in its checked form (unknown fields dropped), or why it is refused. */
export const check = (value: unknown): Either.Either<Checked, string> => {
  const decoded = Schema.decodeUnknownEither(Result)(value)
  if (Either.isLeft(decoded)) return Either.left("the server's input_required result is malformed")
  const result = decoded.right
  const requests = Object.entries(result.inputRequests ?? {})
  if (requests.length > MAX_REQUESTS) {
    return Either.left(`the server asked for ${requests.length} inputs at once (at most ${MAX_REQUESTS})`)
  }
  for (const [key, request] of requests) {
    if (key.length === 0 || key.length > MAX_KEY) return Either.left("the server's input request has a bad key")
    if (!METHODS.has(request.method)) {
      return Either.left(`the server asked for input by an unknown method (${request.method.slice(0, 64)})`)
    }
  }
  if ((result.requestState?.length ?? 0) > MAX_STATE_CHARS) {
    return Either.left(`the server's requestState is over ${MAX_STATE_CHARS} characters`)
  }
  if (requests.length === 0 && result.requestState === undefined) {
    return Either.left("the server's input_required result asks for nothing")
  }
  return Either.right(result)
}

/** Whether a retry's answers are within bounds; the reason when not. */
export const checkRetry = (retry: {
  readonly inputResponses?: Readonly<Record<string, unknown>>
  readonly requestState?: string
}): string | undefined => {
  const answers = Object.keys(retry.inputResponses ?? {})
  if (answers.length > MAX_REQUESTS) return `at most ${MAX_REQUESTS} input responses`
  if (Buffer.byteLength(JSON.stringify(retry.inputResponses ?? {}), "utf8") > MAX_ANSWER_BYTES) {
    return `input responses over ${MAX_ANSWER_BYTES} bytes`
  }
  if ((retry.requestState?.length ?? 0) > MAX_STATE_CHARS) return `requestState over ${MAX_STATE_CHARS} characters`
  return undefined
}

/**
 * The `request_state` this node hands its agent in place of the server's: the server's own (if any) and how many
 * rounds the call has had, so that a retry past MAX_ROUNDS is refused. base64url JSON, `{ "n": round, "s": state }`.
 */
export const wrapState = (round: number, state: string | undefined): string =>
  Buffer.from(JSON.stringify(state === undefined ? { n: round } : { n: round, s: state }), "utf8").toString("base64url")

/** The round and the server's state of a `request_state` this node gave; undefined for anything else. */
export const unwrapState = (
  text: string,
): { readonly round: number; readonly state: string | undefined } | undefined => {
  if (text.length > MAX_STATE_CHARS * 2) return undefined
  try {
    const parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as { n?: unknown; s?: unknown }
    if (typeof parsed.n !== "number" || !Number.isInteger(parsed.n) || parsed.n < 1) return undefined
    if (parsed.s !== undefined && typeof parsed.s !== "string") return undefined
    return { round: parsed.n, state: parsed.s }
  } catch {
    return undefined
  }
}

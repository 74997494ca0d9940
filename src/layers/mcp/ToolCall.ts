/**
 * One `tools/call` in a session with a peer's MCP service, made here rather than by the SDK's client: the SDK checks
 * every message against its whole message schema and reads an event stream through two web transform streams, which
 * made the calling node's share of a remote tool call (docs/bench-notes.md). The session itself (its opening, its id
 * and version, its end) stays with the SDK's transport; this sends one request in it and reads the answer, as JSON or
 * as an event stream, handing progress on as it comes. The result is checked against the tool-result schema as the
 * SDK's client checks it. Failures are the errors the SDK's client would raise for the same answer
 * (StreamableHTTPError for an HTTP status, McpError for a JSON-RPC error), so they are classified alike.
 *
 * A call to a modern (2026-07-28) server is the same request on its own: no session, the envelope in its `_meta`, its
 * method and tool name mirrored in headers; its answer may be `input_required` (checked, domain/InputRequired), and
 * its retry carries the answers and the state. A 400 that is no modern error is LegacyAnswer: the server is of the
 * 2025 era, and the call did not run.
 *
 * What the server asks of us while it works (a `ping`, or a request this client has no capability for) is answered
 * as the SDK's client answers it: `ping` with an empty result, anything else with "method not found", up to
 * MAX_REPLIES a call. A call given
 * up (its signal aborted) tells the server with `notifications/cancelled`, as the SDK's client does.
 */
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { type Duration, Either } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import * as InputRequired from "../../domain/InputRequired.js"
import * as McpEra from "../../domain/McpEra.js"
import type * as Deadlines from "../../platform/Deadlines.js"
import type { Progress, RemoteResult, Retry } from "../../services/mcp/PeerMcp.js"
import * as EventStream from "./EventStream.js"

/**
 * Sends a JSON-RPC message (its JSON text) in the session, or on its own to a modern server; the answer as it comes.
 * `headers`: the ones a modern request mirrors from its body (McpEra.requestHeaders).
 */
export type Post = (body: string, signal?: AbortSignal, headers?: Readonly<Record<string, string>>) => Promise<Response>

/**
 * A modern request answered with a 400 that is no modern error: the server is legacy (spec 2026-07-28, Streamable
 * HTTP backward compatibility). The request did not run.
 */
export class LegacyAnswer extends Error {
  constructor() {
    super("the server answered as a legacy (2025-era) server")
  }
}

export interface Call {
  /** The request's id in the session: one the SDK's client, numbering its own from 0, never uses. */
  readonly id: string
  readonly tool: string
  readonly args: Readonly<Record<string, unknown>>
  /** With it, progress is asked for (the request id as the token) and handed on. */
  readonly onProgress?: (progress: Progress) => void
  /** A self-describing request of the 2026-07-28 era (no session); else one in a 2025-era session. */
  readonly modern?: boolean
  /** The retry of a call that answered `input_required` (modern only). */
  readonly retry?: Retry
}

/**
 * Requests of the server's answered during one call, at most: each answer is a request of its own to the peer, and a
 * hostile server could otherwise have a whole answer of pings make this node send as many.
 */
export const MAX_REPLIES = 32

/** The answer ended without the result: the call went out, and may have run. */
export class NoResult extends Error {}

interface Message {
  readonly jsonrpc?: unknown
  readonly id?: unknown
  readonly method?: unknown
  readonly params?: unknown
  readonly result?: unknown
  readonly error?: unknown
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const mediaType = (contentType: string | null) => (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? ""

const progressOf = (params: unknown, token: string): Progress | undefined => {
  if (!isObject(params) || params.progressToken !== token || typeof params.progress !== "number") return undefined
  return {
    progress: params.progress,
    ...(typeof params.total === "number" ? { total: params.total } : {}),
    ...(typeof params.message === "string" ? { message: params.message } : {}),
  }
}

/** The result of our request, once `message` is its answer; undefined for any other message. */
const answerOf = (message: Message, id: string): { readonly done: RemoteResult } | undefined => {
  if (message.id !== id || message.method !== undefined) return undefined
  if (isObject(message.error)) {
    const { code, message: text, data } = message.error
    throw new McpError(
      typeof code === "number" ? code : ErrorCode.InternalError,
      typeof text === "string" ? text : "",
      data,
    )
  }
  if (isObject(message.result) && message.result.resultType === "input_required") {
    const checked = InputRequired.check(message.result)
    if (Either.isLeft(checked)) throw new Error(checked.left)
    return { done: checked.right }
  }
  const parsed = CallToolResultSchema.safeParse(message.result)
  if (!parsed.success) throw new Error(`the answer is not a tool result: ${parsed.error.message}`)
  return { done: parsed.data }
}

/** The request's params: in a modern request, the envelope in `_meta` and a retry's answers and state. */
const paramsOf = (call: Call): Record<string, unknown> => {
  const { id, tool, args, onProgress, modern, retry } = call
  const progress = onProgress === undefined ? undefined : { progressToken: id }
  if (modern !== true)
    return { name: tool, arguments: { ...args }, ...(progress === undefined ? {} : { _meta: progress }) }
  return {
    name: tool,
    arguments: { ...args },
    _meta: McpEra.envelope(
      progress,
      { name: "mesh-node", version: pkg.version },
      retry?.clientCapabilities ?? InputRequired.RELAYED_CAPABILITIES,
    ),
    ...(retry?.inputResponses === undefined ? {} : { inputResponses: retry.inputResponses }),
    ...(retry?.requestState === undefined ? {} : { requestState: retry.requestState }),
  }
}

/** A modern request's failed answer: legacy (fall back), a modern JSON-RPC error, or the HTTP status. */
const failedAnswer = (status: number, text: string | null, modern: boolean): Error => {
  if (modern && McpEra.answerShowsLegacy(status, text ?? "")) return new LegacyAnswer()
  if (modern && text !== null) {
    try {
      const message = JSON.parse(text) as Message
      if (isObject(message.error) && typeof message.error.code === "number") {
        const { code, message: words, data } = message.error
        return new McpError(code, typeof words === "string" ? words : "", data)
      }
    } catch {
      // Not JSON-RPC: the status says it.
    }
  }
  return new StreamableHTTPError(status, `Error POSTing to endpoint: ${text}`)
}

/** Sends `call` and waits for its result; `signal` gives it up. */
export const call = async (post: Post, call: Call, signal: AbortSignal): Promise<RemoteResult> => {
  const { id, tool } = call
  const modern = call.modern === true
  const params = paramsOf(call)
  const cancelled = () => {
    // A modern request has no session to send a notification in: the request's own stream ending cancels it.
    if (modern) return
    const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason)
    const notice = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason } }
    post(JSON.stringify(notice)).then(
      (response) => response.body?.cancel().catch(() => undefined),
      () => undefined,
    )
  }
  signal.addEventListener("abort", cancelled, { once: true })
  try {
    const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params })
    const response = await post(body, signal, modern ? McpEra.requestHeaders("tools/call", tool) : undefined)
    if (!response.ok) {
      const text = await response.text().catch(() => null)
      throw failedAnswer(response.status, text, modern)
    }
    const type = mediaType(response.headers.get("content-type"))
    if (type === "application/json") {
      const data: unknown = await response.json()
      for (const message of Array.isArray(data) ? data : [data]) {
        const answer = isObject(message) ? answerOf(message, id) : undefined
        if (answer !== undefined) return answer.done
      }
      throw new NoResult("the server's answer held no result for the call")
    }
    if (type !== "text/event-stream" || response.body === null) {
      await response.body?.cancel().catch(() => undefined)
      throw new StreamableHTTPError(-1, `Unexpected content type: ${response.headers.get("content-type")}`)
    }
    return await fromEvents(post, response.body, call)
  } finally {
    signal.removeEventListener("abort", cancelled)
  }
}

/** Reads the event stream until our answer; progress handed on, the server's requests answered. */
const fromEvents = async (post: Post, body: ReadableStream<Uint8Array>, call: Call): Promise<RemoteResult> => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const parser = new EventStream.Parser()
  let replies = 0
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) throw new NoResult("the server's event stream ended before the result of the call")
      for (const event of parser.push(decoder.decode(value, { stream: true }))) {
        if (event.type !== "message" || event.data === "") continue
        const message: unknown = JSON.parse(event.data)
        if (!isObject(message)) continue
        const answer = answerOf(message, call.id)
        if (answer !== undefined) {
          // The rest (the stream's end, as a rule) is read in the background: the exchange ends as the server ends
          // it, not reset.
          drain(reader)
          return answer.done
        }
        if (message.method === "notifications/progress") {
          const progress = progressOf(message.params, call.id)
          if (progress !== undefined) call.onProgress?.(progress)
        } else if (
          // A modern server asks by input_required, never by a request of its own; and it has no session to answer in.
          call.modern !== true &&
          typeof message.method === "string" &&
          message.id !== undefined &&
          replies < MAX_REPLIES
        ) {
          replies += 1
          reply(post, message.method, message.id)
        }
      }
    }
  } catch (error) {
    reader.cancel().catch(() => undefined)
    throw error
  }
}

const drain = (reader: ReadableStreamDefaultReader<Uint8Array>) => {
  const next = (): Promise<void> => reader.read().then((r) => (r.done ? undefined : next()))
  next().catch(() => undefined)
}

/** Answers a request of the server's as the SDK's client, with no capabilities, does. */
const reply = (post: Post, method: string, id: unknown) => {
  const answer =
    method === "ping"
      ? { jsonrpc: "2.0", id, result: {} }
      : { jsonrpc: "2.0", id, error: { code: ErrorCode.MethodNotFound, message: "Method not found" } }
  post(JSON.stringify(answer)).then(
    (response) => response.body?.cancel().catch(() => undefined),
    () => undefined,
  )
}

export interface Limits {
  readonly deadlines: Deadlines.Deadlines
  /** Given up after this long without news; progress is news. */
  readonly quiet: Duration.Duration
  /** Given up after this long in all. */
  readonly total: Duration.Duration
}

/**
 * `call` within its limits, as the SDK's client limits a request (`resetTimeoutOnProgress`, `maxTotalTimeout`): past
 * one, the server is told and the call fails with the SDK's timeout error. The limits are deadlines on the caller's
 * sweeper, not a timer per call.
 */
export const limited = (limits: Limits, post: Post, given: Call, signal: AbortSignal): Promise<RemoteResult> => {
  const controller = new AbortController()
  const giveUp = () => controller.abort(new McpError(ErrorCode.RequestTimeout, "Request timed out"))
  const abort = () => controller.abort(signal.reason)
  signal.addEventListener("abort", abort, { once: true })
  const cancelTotal = limits.deadlines.after(limits.total, giveUp)
  let cancelQuiet = limits.deadlines.after(limits.quiet, giveUp)
  const onProgress = given.onProgress
  const news =
    onProgress === undefined
      ? given
      : {
          ...given,
          onProgress: (progress: Progress) => {
            cancelQuiet()
            cancelQuiet = limits.deadlines.after(limits.quiet, giveUp)
            onProgress(progress)
          },
        }
  // Fails as soon as the call is given up, whatever its exchange is waiting for.
  const givenUp = new Promise<never>((_, reject) => {
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true })
  })
  if (signal.aborted) abort()
  return Promise.race([call(post, news, controller.signal), givenUp]).finally(() => {
    signal.removeEventListener("abort", abort)
    cancelTotal()
    cancelQuiet()
  })
}

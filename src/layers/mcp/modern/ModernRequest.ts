/**
 * One self-describing request of the 2026-07-28 era to a peer's MCP service (no session: the protocol version, the
 * client's identity and capabilities travel in its `_meta`, the method and name in its headers), and its answer read
 * as JSON or as an event stream. Used for the listings (`tools/list`); tool calls, with their progress, go through
 * ToolCall. A 400 that is no modern error is LegacyAnswer: the service is of the 2025 era and the request did not run.
 */
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import pkg from "../../../../package.json" with { type: "json" }
import * as McpEra from "../../../domain/McpEra.js"
import * as EventStream from "../EventStream.js"
import { LegacyAnswer, type Post } from "../ToolCall.js"

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const mediaType = (contentType: string | null) => (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? ""

/** The result when `message` answers `id`; throws its JSON-RPC error; undefined for any other message. */
const resultOf = (message: unknown, id: string): Record<string, unknown> | undefined => {
  if (!isObject(message) || message.id !== id || message.method !== undefined) return undefined
  if (isObject(message.error)) {
    const { code, message: text, data } = message.error
    throw new McpError(
      typeof code === "number" ? code : ErrorCode.InternalError,
      typeof text === "string" ? text : "",
      data,
    )
  }
  if (!isObject(message.result)) throw new Error("the answer holds no result")
  return message.result
}

/** Sends `method` with `params` (the envelope added) and resolves with its result; `signal` gives it up. */
export const send = async (
  post: Post,
  id: string,
  method: string,
  params: Readonly<Record<string, unknown>>,
  signal: AbortSignal,
): Promise<Record<string, unknown>> => {
  const meta = isObject(params._meta) ? params._meta : undefined
  const full = { ...params, _meta: McpEra.envelope(meta, { name: "mesh-node", version: pkg.version }) }
  const response = await post(
    JSON.stringify({ jsonrpc: "2.0", id, method, params: full }),
    signal,
    McpEra.requestHeaders(method),
  )
  if (!response.ok) {
    const text = await response.text().catch(() => "")
    if (McpEra.answerShowsLegacy(response.status, text)) throw new LegacyAnswer()
    const code = McpEra.errorCodeOf(text)
    if (code !== undefined) {
      const error = (JSON.parse(text) as { error: { message?: unknown; data?: unknown } }).error
      throw new McpError(code, typeof error.message === "string" ? error.message : "", error.data)
    }
    throw new StreamableHTTPError(response.status, `Error POSTing to endpoint: ${text}`)
  }
  const type = mediaType(response.headers.get("content-type"))
  if (type === "application/json") {
    const data: unknown = await response.json()
    for (const message of Array.isArray(data) ? data : [data]) {
      const result = resultOf(message, id)
      if (result !== undefined) return result
    }
    throw new Error("the server's answer held no result")
  }
  if (type !== "text/event-stream" || response.body === null) {
    await response.body?.cancel().catch(() => undefined)
    throw new StreamableHTTPError(-1, `Unexpected content type: ${response.headers.get("content-type")}`)
  }
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  const parser = new EventStream.Parser()
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) throw new Error("the server's event stream ended before the result")
      for (const event of parser.push(decoder.decode(value, { stream: true }))) {
        if (event.type !== "message" || event.data === "") continue
        const result = resultOf(JSON.parse(event.data), id)
        if (result !== undefined) return result
      }
    }
  } finally {
    reader.cancel().catch(() => undefined)
  }
}

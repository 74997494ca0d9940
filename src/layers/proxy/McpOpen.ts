/**
 * The serving side of a session opened where the service runs (domain/McpOpen): the initialize and its notification
 * go to the HTTP backend from this node, as the caller's own requests would (its headers, its identity), and the
 * caller's request follows in the new session. Only an allowed request gets this far: the policy and any grant of
 * single tools were checked before, and the request goes on in the form that was checked.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Duration, Effect } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import * as McpOpen from "../../domain/McpOpen.js"
import type * as Backend from "./Backend.js"

/** The initialize and its notification together; the caller's node waits about as long for a session of its own. */
const TIMEOUT = Duration.seconds(15)
/** An initialize answer is small; one far larger is not one. */
const MAX_ANSWER_BYTES = 256 * 1024

export interface Opened {
  /** The session's id; none from a service that keeps no sessions. */
  readonly sessionId: string | undefined
  readonly protocolVersion: string
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

/** Opens a session with the backend for the caller of `req`; the reason it could not, as text, otherwise. */
export const open = (
  exchange: Backend.Exchange,
  target: Backend.Target,
  req: IncomingMessage,
  protocolVersion: string,
): Effect.Effect<Opened, string> =>
  Effect.gen(function* () {
    const limits = { maxBytes: MAX_ANSWER_BYTES, timeout: TIMEOUT }
    const body = Buffer.from(JSON.stringify(McpOpen.initialize(protocolVersion, pkg.version)))
    const answer = yield* exchange(target, req.headers, JSON_HEADERS, body, limits)
    if (answer.status !== 200) return yield* Effect.fail(`the service answered its initialize with ${answer.status}`)
    const agreed = McpOpen.agreedVersion(String(answer.headers["content-type"] ?? ""), answer.body.toString("utf8"))
    if (agreed === undefined) return yield* Effect.fail("the service's initialize answer was not one")
    const header = answer.headers["mcp-session-id"]
    const sessionId = typeof header === "string" && header.length > 0 ? header : undefined
    const inSession = {
      ...JSON_HEADERS,
      "mcp-protocol-version": agreed,
      ...(sessionId === undefined ? {} : { "mcp-session-id": sessionId }),
    }
    const notified = yield* exchange(
      target,
      req.headers,
      inSession,
      Buffer.from(JSON.stringify(McpOpen.INITIALIZED)),
      limits,
    )
    if (notified.status >= 300) {
      return yield* Effect.fail(`the service answered the initialized notification with ${notified.status}`)
    }
    return { sessionId, protocolVersion: agreed }
  })

/**
 * No session could be opened: answered as a service answers a request without one (nothing ran), so the caller's
 * node opens one the ordinary way, and meets the service's own answer to its initialize.
 */
export const writeNotOpened = (res: ServerResponse, reason: string): void => {
  const text = JSON.stringify({
    jsonrpc: "2.0",
    error: { code: -32000, message: `Bad Request: no session; the serving node could not open one (${reason})` },
    id: null,
  })
  res.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

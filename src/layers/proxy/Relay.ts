/** Passing a message body on, on either side of the proxy, without buffering it. */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Writable } from "node:stream"
import * as Forwarding from "../../domain/Forwarding.js"

/**
 * Pipes a message body on; when it stops short (its connection reset), the destination is destroyed too, so the
 * next hop sees the body fail rather than end. `pipe` rather than `pipeline`: the latter costs an AbortController
 * and an exception object per call, a measurable share of a small proxied request.
 */
export const relayBody = (from: IncomingMessage, to: Writable): void => {
  from.pipe(to)
  from.once("close", () => {
    if (!from.complete) to.destroy(new Error("the message was cut off"))
  })
}

/** Whether a request carries a body at all (RFC 9112 §6.3: a length or a transfer coding announces one). */
export const hasBody = (request: IncomingMessage): boolean =>
  request.headers["transfer-encoding"] !== undefined ||
  (request.headers["content-length"] !== undefined && request.headers["content-length"] !== "0")

/**
 * For a body of unknown length (an event stream, a chunked answer): `res`'s headers, written but not sent, go out by
 * themselves once this turn of the event loop is over, unless `upstream`'s body began in it. Its first event may be
 * long in coming, and the caller is owed the head meanwhile; but one that came in the same read as the head (an MCP
 * server's answer, as a rule) leaves with it, one write instead of two. A body of known length needs nothing: its
 * headers leave with its first bytes.
 */
export const headersUnlessBodyFollows = (upstream: IncomingMessage, res: ServerResponse): void => {
  if (upstream.headers["content-length"] !== undefined) return
  let begun = false
  upstream.once("data", () => {
    begun = true
  })
  setImmediate(() => {
    if (!begun && !res.writableEnded && !res.destroyed) res.flushHeaders()
  })
}

/** Streams `upstream` to `res` (after `head`, bytes already read from it, which take the headers with them). */
export const relayResponse = (upstream: IncomingMessage, res: ServerResponse, head: ReadonlyArray<Buffer> = []) => {
  res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, Forwarding.response(upstream.headers))
  if (head.length === 0) headersUnlessBodyFollows(upstream, res)
  for (const chunk of head) res.write(chunk)
  relayBody(upstream, res)
  // The client went away: stop reading the answer (its stream or connection is closed by whoever owns it).
  res.once("close", () => {
    if (!upstream.complete) upstream.destroy()
  })
}

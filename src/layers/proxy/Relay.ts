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
 * Streams `upstream` to `res` (after `head`, bytes already read from it). When the body's length is unknown (an
 * event stream, a chunked answer) the headers go out at once, since the first event may be long in coming; with a
 * known length they leave with the first bytes of the body, one write instead of two.
 */
export const relayResponse = (upstream: IncomingMessage, res: ServerResponse, head: ReadonlyArray<Buffer> = []) => {
  res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, Forwarding.response(upstream.headers))
  if (upstream.headers["content-length"] === undefined) res.flushHeaders()
  for (const chunk of head) res.write(chunk)
  relayBody(upstream, res)
  // The client went away: stop reading the answer (its stream or connection is closed by whoever owns it).
  res.once("close", () => {
    if (!upstream.complete) upstream.destroy()
  })
}

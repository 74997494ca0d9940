/**
 * The node's raw HTTP exchange as the SDK's fetch-shaped handler takes it: the request (its body already read) as a
 * web `Request`, whose signal aborts when the client goes away (a tool call in flight is cancelled), and the web
 * `Response` written back to the Node response as it streams (a `subscriptions/listen` stream or a call's progress),
 * its stream cancelled when the client goes away.
 */
import type { IncomingMessage, ServerResponse } from "node:http"

export interface Exchange {
  readonly request: Request
  /** Aborts the request (the client went away, the node stops). */
  readonly abort: () => void
}

/** The request as a web Request, with `body` (already read) as its body; `traceparent` replaces the client's own. */
export const toRequest = (req: IncomingMessage, body: Uint8Array | undefined, traceparent?: string): Exchange => {
  const headers = new Headers()
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string
    if (traceparent !== undefined && name.toLowerCase() === "traceparent") continue
    headers.append(name, req.rawHeaders[i + 1] as string)
  }
  if (traceparent !== undefined) headers.set("traceparent", traceparent)
  const controller = new AbortController()
  const method = req.method ?? "GET"
  const request = new Request(new URL(req.url ?? "/", "http://localhost"), {
    method,
    headers,
    signal: controller.signal,
    ...(body === undefined || method === "GET" || method === "HEAD" ? {} : { body }),
  })
  return { request, abort: () => controller.abort() }
}

/** Writes `response` to `res`, streaming its body; resolves when it is written or the client went away. */
export const write = (response: Response, res: ServerResponse): Promise<void> =>
  new Promise<void>((resolve) => {
    const headers: Array<[string, string]> = []
    response.headers.forEach((value, name) => {
      headers.push([name, value])
    })
    res.writeHead(response.status, headers)
    const body = response.body
    if (body === null) {
      res.end(resolve)
      return
    }
    const reader = body.getReader()
    const gone = () => {
      reader.cancel().catch(() => undefined)
      resolve()
    }
    res.once("close", gone)
    const pump = async () => {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        // An event stream's frames go out as they come: no waiting for more to fill a chunk.
        if (res.closed) return
        if (!res.write(value))
          await new Promise<void>((drained) => {
            res.once("drain", drained)
            res.once("close", drained)
          })
      }
      res.off("close", gone)
      res.end(resolve)
    }
    pump().catch(() => {
      res.off("close", gone)
      res.destroy()
      resolve()
    })
  })

/** A JSON-RPC error answered at the HTTP layer, in the SDK's words and shape. */
export const error = (
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  id: string | number | null,
): void => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id }))
}

/**
 * `fetch` over a Unix socket, for clients of a node's local API socket: node:http with `socketPath`, answered as a
 * web Response whose body streams. The MCP SDK's client transports take it as their `fetch` option.
 */
import { request } from "node:http"
import { Readable } from "node:stream"

export const socketFetch =
  (socketPath: string): typeof fetch =>
  (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input))
      const headers = new Headers(input instanceof Request ? input.headers : undefined)
      for (const [k, v] of new Headers(init?.headers).entries()) headers.set(k, v)
      const body = init?.body ?? null
      const req = request({
        socketPath,
        method: init?.method ?? (input instanceof Request ? input.method : "GET"),
        path: `${url.pathname}${url.search}`,
        headers: { ...Object.fromEntries(headers.entries()), host: url.host },
      })
      const signal = init?.signal
      const abort = () => req.destroy(new DOMException("aborted", "AbortError"))
      if (signal?.aborted) return abort()
      signal?.addEventListener("abort", abort, { once: true })
      req.on("error", reject)
      req.on("response", (res) => {
        const status = res.statusCode ?? 500
        const out = new Headers()
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) for (const item of v) out.append(k, item)
          else if (v !== undefined) out.set(k, v)
        }
        const stream = status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>)
        resolve(new Response(stream, { status, headers: out }))
      })
      if (body === null) req.end()
      else if (typeof body === "string" || body instanceof Uint8Array) req.end(body)
      else if (body instanceof ArrayBuffer) req.end(Buffer.from(body))
      else if (body instanceof ReadableStream) Readable.fromWeb(body as never).pipe(req)
      else req.end(String(body))
    })

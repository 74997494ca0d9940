/**
 * A modern-only MCP server over Streamable HTTP at `/mcp` (SDK v2 `createMcpHandler`, `legacy: 'reject'`: 2025-era
 * requests, `initialize` included, are refused with the unsupported-version error), with modernTools. Listens on
 * loopback for the scope's life. Every request's method and protocol version header is recorded, with the calling
 * peer a serving node names (`X-Mesh-Peer-Id`). `options` go to modernTools (a ttl for its listings, more tools).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { createMcpHandler } from "@modelcontextprotocol/server"
import { Effect } from "effect"
import { listen } from "./backends.js"
// @ts-expect-error: plain JavaScript shared with the stdio server (modernStdioServer.mjs)
import { modernTools } from "./modernTools.mjs"

export interface Heard {
  readonly method: string | undefined
  readonly version: string | undefined
  readonly session: string | undefined
  /** The peer the request came from, through its serving node; none from the serving node itself (its probe). */
  readonly peer: string | undefined
}

export interface Options {
  readonly ttlMs?: number
  readonly more?: (server: unknown) => void
}

const bodyOf = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

export const modernMcp = (who: string, options: Options = {}) =>
  Effect.gen(function* () {
    const heard: Array<Heard> = []
    const handler = createMcpHandler(() => modernTools(who, options), { legacy: "reject" })
    yield* Effect.addFinalizer(() => Effect.promise(() => handler.close()))
    const serve = async (req: IncomingMessage, res: ServerResponse) => {
      const body = req.method === "POST" ? await bodyOf(req) : undefined
      const header = (name: string) => {
        const value = req.headers[name]
        return typeof value === "string" ? value : undefined
      }
      let method: string | undefined
      try {
        method = body === undefined ? undefined : (JSON.parse(body.toString()) as { method?: string }).method
      } catch {
        method = undefined
      }
      heard.push({
        method,
        version: header("mcp-protocol-version"),
        session: header("mcp-session-id"),
        peer: header("x-mesh-peer-id"),
      })
      if (process.env.DEBUG_MODERN) console.log("HEARD", body?.toString())
      const headers = new Headers()
      for (const [key, value] of Object.entries(req.headers)) {
        if (typeof value === "string") headers.set(key, value)
      }
      const request = new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`, {
        method: req.method ?? "GET",
        headers,
        ...(body === undefined ? {} : { body: new Uint8Array(body) }),
      })
      const response = await handler.fetch(request)
      res.writeHead(response.status, Object.fromEntries(response.headers.entries()))
      if (response.body === null) return res.end()
      const reader = response.body.getReader()
      res.on("close", () => reader.cancel().catch(() => undefined))
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        res.write(value)
      }
      res.end()
    }
    const backend = yield* listen((req, res) => {
      serve(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
    return { ...backend, heard: () => [...heard] }
  })

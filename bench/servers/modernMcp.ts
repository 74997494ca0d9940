/**
 * A modern-only MCP server (SDK v2, 2026-07-28, `legacy: 'reject'`) behind the mesh in bench/rtt: Streamable HTTP at
 * `/mcp`, stateless, one tool, `echo`, that returns its text. `GET /healthz` answers when it listens.
 */
import { createServer, type IncomingMessage } from "node:http"
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server"
import { z } from "zod"

const [port] = process.argv.slice(2)

const handler = createMcpHandler(
  () => {
    const mcp = new McpServer({ name: "bench-modern-echo", version: "1.0.0" }, { capabilities: { tools: {} } })
    mcp.registerTool(
      "echo",
      { description: "Echoes its text", inputSchema: z.object({ text: z.string() }) },
      ({ text }) => ({
        content: [{ type: "text", text }],
      }),
    )
    return mcp
  },
  { legacy: "reject" },
)

const bodyOf = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

createServer(async (req, res) => {
  if (req.url === "/healthz") {
    res.writeHead(200)
    return void res.end("ok")
  }
  const body = req.method === "POST" ? await bodyOf(req) : undefined
  const headers = new Headers()
  for (const [key, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(key, value)
  const response = await handler.fetch(
    new Request(`http://127.0.0.1:${port}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers,
      ...(body === undefined ? {} : { body: new Uint8Array(body) }),
    }),
  )
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()))
  res.end(Buffer.from(await response.arrayBuffer()))
}).listen(Number(port), "127.0.0.1")

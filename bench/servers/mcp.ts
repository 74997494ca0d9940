/**
 * The MCP server behind the mesh in bench/mcp: stateful Streamable HTTP at `/mcp` (a session per initialize) with one
 * tool, `echo`, that returns its text. `GET /healthz` answers when it listens.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { z } from "zod"

const [port] = process.argv.slice(2)
const sessions = new Map<string, StreamableHTTPServerTransport>()

const server = () => {
  const mcp = new McpServer({ name: "bench-echo", version: "1.0.0" })
  mcp.registerTool("echo", { description: "Echoes its text", inputSchema: { text: z.string() } }, (args) => ({
    content: [{ type: "text", text: args.text }],
  }))
  return mcp
}

createServer((req, res) => {
  if (req.url === "/healthz") {
    res.writeHead(200)
    return void res.end("ok")
  }
  const id = req.headers["mcp-session-id"]
  const known = typeof id === "string" ? sessions.get(id) : undefined
  if (known !== undefined) return void known.handleRequest(req, res)
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (sid) => {
      sessions.set(sid, transport)
    },
    onsessionclosed: (sid) => {
      sessions.delete(sid)
    },
  })
  void server()
    .connect(transport)
    .then(() => transport.handleRequest(req, res))
}).listen(Number(port), "127.0.0.1")

/**
 * Real backends on loopback, for the services a test node publishes: an MCP server built with the MCP SDK
 * (Streamable HTTP, stateless), an OpenAI-compatible model list and an A2A agent card. Each listens for the life of
 * the scope, on a port of its own or the one the test chose (to bring a backend up late). The MCP server is
 * stateless: no session id, a fresh server per request.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Effect } from "effect"
import { z } from "zod"

export interface Backend {
  readonly url: string
  readonly port: number
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void

const listen = (handler: Handler, port = 0) =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer(handler)
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      }),
  ).pipe(
    Effect.map((server): Backend => {
      const address = server.address()
      const bound = typeof address === "object" && address !== null ? address.port : port
      return { url: `http://127.0.0.1:${bound}`, port: bound }
    }),
  )

const json = (res: ServerResponse, body: unknown) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const notFound = (res: ServerResponse) => {
  res.writeHead(404)
  res.end()
}

/** An MCP server whose tools echo their `text` argument; served at `/mcp`. */
export const mcp = (tools: ReadonlyArray<string>, port?: number) =>
  listen((req, res) => {
    if (!(req.url ?? "").startsWith("/mcp")) return notFound(res)
    const server = new McpServer({ name: "test-backend", version: "1.0.0" })
    for (const name of tools) {
      server.registerTool(
        name,
        { description: `echoes its text (${name})`, inputSchema: { text: z.string() } },
        (args) => ({
          content: [{ type: "text", text: args.text }],
        }),
      )
    }
    const transport = new StreamableHTTPServerTransport({})
    res.on("close", () => {
      void transport.close()
      void server.close()
    })
    void server.connect(transport).then(() => transport.handleRequest(req, res))
  }, port)

/** An OpenAI-compatible backend that lists `models` at `/v1/models`. */
export const inference = (models: ReadonlyArray<string>, port?: number) =>
  listen((req, res) => {
    if (req.url !== "/v1/models") return notFound(res)
    json(res, {
      object: "list",
      data: models.map((id) => ({ id, object: "model", created: 0, owned_by: "test" })),
    })
  }, port)

/** An A2A agent that serves its card. */
export const agent = (name: string, port?: number) =>
  listen((req, res) => {
    if (req.url !== "/.well-known/agent-card.json") return notFound(res)
    json(res, {
      name,
      description: "a test agent",
      url: `http://127.0.0.1/${name}`,
      version: "1.0.0",
      capabilities: {},
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [],
    })
  }, port)

/** A backend that answers every request with `status` (401 and 403: it wants a credential the node lacks). */
export const refusing = (status: number) =>
  listen((_req, res) => {
    res.writeHead(status, { "content-type": "application/json", "www-authenticate": "Bearer" })
    res.end(JSON.stringify({ error: "no" }))
  })

/**
 * The demo MCP server mesh-one publishes from node A as `demo`: two small, deterministic tools, `sha256` (the hex
 * digest of a text) and `word_count` (words, lines and characters of a text). Streamable HTTP at `/mcp`, stateless:
 * a fresh server per request, so it keeps nothing between calls.
 */
import { createHash } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Effect, type Scope } from "effect"
import { z } from "zod"
import pkg from "../../package.json" with { type: "json" }
import { type AddressInUse, listen } from "./Serve.js"

export const SERVICE_NAME = "demo"

export const countWords = (text: string) => ({
  words: text.split(/\s+/).filter((w) => w.length > 0).length,
  lines: text.length === 0 ? 0 : text.split("\n").length,
  characters: [...text].length,
})

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`

const server = () => {
  const mcp = new McpServer({ name: "mesh-demo-tools", version: pkg.version })
  mcp.registerTool(
    "sha256",
    {
      description: "The SHA-256 digest of a text (UTF-8), in hex",
      inputSchema: { text: z.string().describe("The text to hash") },
      outputSchema: { sha256: z.string() },
      annotations: { readOnlyHint: true },
    },
    ({ text }) => {
      const sha256 = createHash("sha256").update(text, "utf8").digest("hex")
      return { content: [{ type: "text", text: sha256 }], structuredContent: { sha256 } }
    },
  )
  mcp.registerTool(
    "word_count",
    {
      description: "How many words, lines and characters a text has",
      inputSchema: { text: z.string().describe("The text to count") },
      outputSchema: { words: z.number(), lines: z.number(), characters: z.number() },
      annotations: { readOnlyHint: true },
    },
    ({ text }) => {
      const counts = countWords(text)
      const line = [
        plural(counts.words, "word"),
        plural(counts.lines, "line"),
        plural(counts.characters, "character"),
      ].join(", ")
      return { content: [{ type: "text", text: line }], structuredContent: counts }
    },
  )
  return mcp
}

const handle = (req: IncomingMessage, res: ServerResponse) => {
  if (!(req.url ?? "").startsWith("/mcp")) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not_found"}')
    return
  }
  const mcp = server()
  const transport = new StreamableHTTPServerTransport({})
  res.once("close", () => {
    void transport.close()
    void mcp.close()
  })
  mcp
    .connect(transport)
    .then(() => transport.handleRequest(req, res))
    .catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
    })
}

/** Serves the demo tools on 127.0.0.1:`port` for the life of the scope; its MCP URL. */
export const make = (port: number): Effect.Effect<string, AddressInUse, Scope.Scope> =>
  Effect.map(listen(port, handle), (bound) => `http://127.0.0.1:${bound}/mcp`)

/**
 * A stdio MCP server for tests, run by a node as a service `command`: `echo` (with an output schema), `env` (the
 * environment it was given), `pid` (its process id) and `crash` (ends the process without answering). It says on
 * stderr that it started, quoting TEST_SECRET, which the node must redact in its log.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { z } from "zod"

const server = new McpServer({ name: "stdio-test-server", version: "1.0.0" })
server.registerTool(
  "echo",
  {
    description: "Echoes its text",
    inputSchema: { text: z.string() },
    outputSchema: { text: z.string(), pid: z.number() },
  },
  async ({ text }) => ({
    content: [{ type: "text", text }],
    structuredContent: { text, pid: process.pid },
  }),
)
server.registerTool("env", { description: "The environment this process was given" }, async () => ({
  content: [{ type: "text", text: JSON.stringify(process.env) }],
}))
server.registerTool("pid", { description: "This process's id" }, async () => ({
  content: [{ type: "text", text: String(process.pid) }],
}))
server.registerTool("crash", { description: "Ends this process without answering" }, async () => {
  process.exit(3)
})
process.stderr.write(`stdio test server ${process.pid} started; secret=${process.env.TEST_SECRET ?? "none"}\n`)
await server.connect(new StdioServerTransport())

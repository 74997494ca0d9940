/**
 * The tools of a modern-only MCP server (SDK v2, 2026-07-28 only), for the tests of MCP across the mesh in that era:
 * `echo` (says who answered), `count` (progress at each step), `confirm` (asks for a confirmation by
 * `input_required`, answers once it is given on the retry). Plain JavaScript so that a stdio server can run it with
 * node alone (modernStdioServer.mjs); the HTTP one (modernMcp.ts) uses it too.
 */
import { acceptedContent, inputRequired, McpServer } from "@modelcontextprotocol/server"
import { z } from "zod"

/**
 * `options.ttlMs`: the caching hint its `tools/list` results carry (the SDK's default is 0); `options.more`: called
 * with the server before it is returned, to register more tools.
 */
export const modernTools = (name, options = {}) => {
  const server = new McpServer(
    { name: `modern-${name}`, version: "1.0.0" },
    {
      capabilities: { tools: {} },
      ...(options.ttlMs === undefined
        ? {}
        : { cacheHints: { "tools/list": { ttlMs: options.ttlMs, cacheScope: "public" } } }),
    },
  )
  server.registerTool(
    "echo",
    { description: "Echoes a text back, prefixed with who answered", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text: `${name}:${text}` }] }),
  )
  server.registerTool(
    "count",
    {
      description: "Counts up to steps, reporting progress at each step",
      inputSchema: z.object({ steps: z.number().int().min(1).max(10) }),
    },
    async ({ steps }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken
      for (let step = 1; step <= steps; step++) {
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: steps, message: `step ${step}` },
          })
        }
      }
      return { content: [{ type: "text", text: `${name}:counted ${steps}` }] }
    },
  )
  const confirmation = z.object({ confirm: z.boolean() })
  server.registerTool(
    "confirm",
    { description: "Does an action once the user confirms it", inputSchema: z.object({ action: z.string() }) },
    async ({ action }, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, "confirm", confirmation)
      if (answer === undefined) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: `Really ${action}?`, requestedSchema: confirmation }),
          },
          requestState: `asked:${action}`,
        })
      }
      return { content: [{ type: "text", text: `${name}:${answer.confirm ? "did" : "did not"} ${action}` }] }
    },
  )
  options.more?.(server)
  return server
}

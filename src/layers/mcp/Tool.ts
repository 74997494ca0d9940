/**
 * A tool of the node's MCP server: its name, schemas (zod, as the SDK takes them) and an Effect that computes the
 * result. Results carry structured content plus the same as JSON text, for clients that read only text.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Runtime } from "effect"
import type { z } from "zod"

export interface Tool<Shape extends z.ZodRawShape, R> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly input: Shape
  readonly output: z.ZodRawShape
  readonly run: (args: z.infer<z.ZodObject<Shape>>) => Effect.Effect<CallToolResult, never, R>
}

/** What a list of tools needs to run. */
export type Requirements<T extends ReadonlyArray<unknown>> = T[number] extends Tool<infer _S, infer R> ? R : never

export const make = <Shape extends z.ZodRawShape, R>(tool: Tool<Shape, R>): Tool<Shape, R> => tool

/** A successful result: structured content and its JSON text. */
export const ok = (structured: Record<string, unknown>): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(structured, null, 2) }],
  structuredContent: structured,
})

/** A failure the agent should read (a refusal, an unreachable peer): `isError`, never a transport error. */
export const refused = (message: string): CallToolResult => ({
  content: [{ type: "text", text: message }],
  isError: true,
})

/** Registers the tools on a server, running each call on the given runtime; a defect becomes a tool error. */
export const register = <R>(
  server: McpServer,
  runtime: Runtime.Runtime<R>,
  tools: ReadonlyArray<Tool<z.ZodRawShape, R>>,
) => {
  const run = Runtime.runPromise(runtime)
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output },
      (args: unknown) =>
        run(
          tool
            .run(args as never)
            .pipe(
              Effect.catchAllCause((cause) =>
                Effect.as(
                  Effect.logError("MCP tool failed", cause),
                  refused(`${tool.name} failed: ${Cause.pretty(cause).split("\n")[0]}`),
                ),
              ),
            ),
        ),
    )
  }
}

/**
 * A tool of the node's MCP server: its name, schemas (zod, as the SDK takes them) and an Effect that computes the
 * result. Results carry structured content plus the same as JSON text, for clients that read only text. A call the
 * client cancels is interrupted.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Runtime } from "effect"
import type { z } from "zod"
import * as TraceContext from "../../http/TraceContext.js"
import * as Spans from "../observability/Spans.js"

/** What a tool knows of the HTTP request that carried the call. */
export interface Request {
  /** The Host header the client sent, if any (URLs handed back to the client use it). */
  readonly host: string | undefined
}

export interface Tool<Shape extends z.ZodRawShape, R> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly input: Shape
  readonly output: z.ZodRawShape
  readonly annotations?: ToolAnnotations
  /** A method, so that a list of tools with different inputs is a list of tools (its parameters are bivariant). */
  run(args: z.infer<z.ZodObject<Shape>>, request: Request): Effect.Effect<CallToolResult, never, R>
}

type RequirementsOf<X> = X extends Tool<infer _S, infer R> ? R : never

/** What a list of tools needs to run: the union of what each needs. */
export type Requirements<T extends ReadonlyArray<unknown>> = RequirementsOf<T[number]>

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

const hostOf = (headers: Record<string, string | ReadonlyArray<string> | undefined> | undefined) => {
  const host = headers?.host
  return typeof host === "string" ? host : undefined
}

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
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        outputSchema: tool.output,
        ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
      },
      (args: unknown, extra) =>
        run(
          tool.run(args as never, { host: hostOf(extra.requestInfo?.headers) }).pipe(
            Effect.catchAllCause((cause) =>
              Effect.as(
                Effect.logError("MCP tool failed", cause),
                refused(`${tool.name} failed: ${Cause.pretty(cause).split("\n")[0]}`),
              ),
            ),
            Effect.tap((result) => Spans.annotate("mcp.tool.is_error", result.isError === true)),
            // The tool's name only: its arguments and results are the agent's business.
            Spans.withSpan("mcp.tool", {
              kind: "server",
              captureStackTrace: false,
              attributes: { "mcp.tool.name": tool.name },
              ...TraceContext.parentOption(extra.requestInfo?.headers ?? {}),
            }),
          ),
          { signal: extra.signal },
        ),
    )
  }
}

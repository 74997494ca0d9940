/**
 * A tool of the node's MCP server: its name, schemas (zod) and an Effect that computes the result. Results carry
 * structured content plus the same as JSON text, for clients that read only text. A call the client cancels is
 * interrupted. The node serves its tools itself on the SDK's low-level servers (one per protocol era:
 * legacy/LegacyToolHandlers, modern/ModernTools), beside the federated ones, so `definition` and `invoke` do what the
 * SDK's McpServer would, the same in both eras.
 */
import { getParseErrorMessage } from "@modelcontextprotocol/sdk/server/zod-compat.js"
import { toJsonSchemaCompat } from "@modelcontextprotocol/sdk/server/zod-json-schema-compat.js"
import type { CallToolResult, Tool as McpTool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Runtime } from "effect"
import { z } from "zod"
import * as TraceContext from "../../http/TraceContext.js"
import * as Spans from "../../platform/Spans.js"
import type { Progress } from "../../services/mcp/PeerMcp.js"
import { refused } from "./ToolResult.js"

/** What a tool knows of the HTTP request that carried the call. */
export interface Request {
  /** The Host header the client sent, if any (URLs handed back to the client use it). */
  readonly host: string | undefined
  /** Where progress of the call goes, when the client asked for it. */
  readonly onProgress?: (progress: Progress) => void
}

export interface Definition<Shape extends z.ZodRawShape, R> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly input: Shape
  readonly output: z.ZodRawShape
  readonly annotations?: ToolAnnotations
  /** A method, so that a list of tools with different inputs is a list of tools (its parameters are bivariant). */
  run(args: z.infer<z.ZodObject<Shape>>, request: Request): Effect.Effect<CallToolResult, never, R>
}

export interface Tool<Shape extends z.ZodRawShape, R> extends Definition<Shape, R> {
  /**
   * The input shape as one schema, made once: zod compiles an object schema on its first parse, so a schema made
   * per call is compiled per call.
   */
  readonly inputSchema: z.ZodType
}

type RequirementsOf<X> = X extends Tool<infer _S, infer R> ? R : never

/** What a list of tools needs to run: the union of what each needs. */
export type Requirements<T extends ReadonlyArray<unknown>> = RequirementsOf<T[number]>

export const make = <Shape extends z.ZodRawShape, R>(definition: Definition<Shape, R>): Tool<Shape, R> => ({
  ...definition,
  inputSchema: z.object(definition.input),
})

export { ok, refused } from "./ToolResult.js"

/** Input schemas of tools without arguments, as MCP clients expect them. */
const EMPTY_INPUT = { type: "object" as const, properties: {} }

/** The tool as `tools/list` shows it: JSON schemas from its zod shapes, converted as the SDK's own server does. */
export const definition = (
  tool: Pick<Definition<z.ZodRawShape, never>, "name" | "title" | "description" | "input" | "output" | "annotations">,
): McpTool => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema:
    Object.keys(tool.input).length === 0
      ? EMPTY_INPUT
      : (toJsonSchemaCompat(z.object(tool.input), {
          strictUnions: true,
          pipeStrategy: "input",
        }) as McpTool["inputSchema"]),
  outputSchema: toJsonSchemaCompat(z.object(tool.output), {
    strictUnions: true,
    pipeStrategy: "output",
  }) as McpTool["outputSchema"],
  ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
})

/**
 * One call as either era's server hands it over, in the terms the tools need: the HTTP request's headers (its span
 * is continued, its Host read), where progress goes, and the signal that cancels it.
 */
export interface Call {
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly signal: AbortSignal
  readonly onProgress?: (progress: Progress) => void
}

const hostOf = (headers: Call["headers"]) => {
  const host = headers.host
  return typeof host === "string" ? host : undefined
}

/** Progress messages from a peer are its words: cut to this. */
export const MAX_PROGRESS_MESSAGE = 1024

/** A progress notification's params for `token`, the peer's message cut to MAX_PROGRESS_MESSAGE. */
export const progressParams = (token: string | number, progress: Progress) => ({
  progressToken: token,
  progress: progress.progress,
  ...(progress.total === undefined ? {} : { total: progress.total }),
  ...(progress.message === undefined ? {} : { message: progress.message.slice(0, MAX_PROGRESS_MESSAGE) }),
})

export const requestOf = (call: Call): Request => ({
  host: hostOf(call.headers),
  ...(call.onProgress === undefined ? {} : { onProgress: call.onProgress }),
})

/**
 * `effect` as the server span of a tool call, named by the tool alone (its arguments and results are the agent's
 * business), continuing the request's trace.
 */
export const traced = <R>(name: string, call: Call, effect: Effect.Effect<CallToolResult, never, R>) =>
  effect.pipe(
    Effect.tap((result) => Spans.annotate("mcp.tool.is_error", result.isError === true)),
    Spans.withSpan("mcp.tool", {
      kind: "server",
      captureStackTrace: false,
      attributes: { "mcp.tool.name": name },
      ...TraceContext.parentOption(call.headers),
    }),
  )

/**
 * Runs one of the node's own tools: arguments checked against its input shape (a mismatch is a tool error, as the
 * SDK's server words it), a defect turned into a tool error, a call the client cancels interrupted.
 */
export const invoke = <R>(
  runtime: Runtime.Runtime<R>,
  tool: Tool<z.ZodRawShape, R>,
  args: unknown,
  call: Call,
): Promise<CallToolResult> => {
  const parsed = tool.inputSchema.safeParse(args ?? {})
  if (!parsed.success) {
    return Promise.resolve(
      refused(`Input validation error: Invalid arguments for tool ${tool.name}: ${getParseErrorMessage(parsed.error)}`),
    )
  }
  return Runtime.runPromise(runtime)(
    traced(
      tool.name,
      call,
      tool
        .run(parsed.data as never, requestOf(call))
        .pipe(
          Effect.catchAllCause((cause) =>
            Effect.as(
              Effect.logError("MCP tool failed", cause),
              refused(`${tool.name} failed: ${Cause.pretty(cause).split("\n")[0]}`),
            ),
          ),
        ),
    ),
    { signal: call.signal },
  )
}

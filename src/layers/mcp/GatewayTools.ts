/**
 * The tools of the node's MCP server, the same in both protocol eras: the node's own six first, in their fixed order,
 * then the federated ones this caller may see (Federation, FederationScope) by name, so that a list is the same list
 * whenever nothing changed. A call of an own tool runs it (Tool.invoke); a federated tool's call goes to Federation
 * with the client's progress honoured; a name that is neither, a federated tool this caller may not see or one no
 * longer listed included, is a tool error.
 */
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Option, Runtime } from "effect"
import type { z } from "zod"
import { type Caller, Federation } from "../../services/federation/Federation.js"
import * as Tool from "./Tool.js"

const byName = (a: McpTool, b: McpTool) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** What `tools/list` answers for `caller`. */
export const list = (
  definitions: ReadonlyArray<McpTool>,
  caller: Caller,
): Effect.Effect<ReadonlyArray<McpTool>, never, Federation> =>
  Effect.map(
    Effect.flatMap(Federation, (federation) => federation.list(caller)),
    (federated) => [...definitions, ...federated.map((t) => t.definition).sort(byName)],
  )

/** What `tools/call` of `name` answers for `caller`. */
export const call = <R>(
  runtime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  caller: Caller,
  name: string,
  args: Readonly<Record<string, unknown>> | undefined,
  request: Tool.Call,
): Promise<CallToolResult> => {
  const tool = tools.find((t) => t.name === name)
  if (tool !== undefined) return Tool.invoke(runtime, tool, args, request)
  const federated = Effect.gen(function* () {
    const federation = yield* Federation
    const found = yield* federation.lookup(caller, name)
    if (Option.isNone(found)) return Tool.refused(`Tool ${name} not found`)
    return yield* federation.call(found.value, args ?? {}, request.onProgress)
  })
  return Runtime.runPromise(runtime)(Tool.traced(name, request, federated), { signal: request.signal })
}

/**
 * A `call_remote_tool` result that stands for the remote tool's `input_required` (InputRequiredView): its requests,
 * the node's state to send back, and the call it belongs to. Each era's server presents it to its agent its own way.
 */
export interface Asked {
  readonly inputRequests: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>>
  readonly requestState: string
  readonly peerId: string
  readonly toolName: string
}

export const asked = (result: CallToolResult): Asked | undefined => {
  const structured = result.structuredContent as Record<string, unknown> | undefined
  if (result.isError === true || structured?.resultType !== "input_required") return undefined
  const { inputRequests, requestState, peer_id, tool_name } = structured
  if (typeof requestState !== "string" || typeof peer_id !== "string" || typeof tool_name !== "string") return undefined
  if (typeof inputRequests !== "object" || inputRequests === null) return undefined
  return { inputRequests: inputRequests as Asked["inputRequests"], requestState, peerId: peer_id, toolName: tool_name }
}

/** The arguments of `call_remote_tool`'s retry that answers `asked`. */
export const retryArguments = (
  args: Readonly<Record<string, unknown>> | undefined,
  responses: Readonly<Record<string, unknown>>,
  requestState: string,
): Record<string, unknown> => ({ ...args, input_responses: responses, request_state: requestState })

/**
 * `tools/list` and `tools/call` of the node's MCP server for a 2026-07-28 request (the 2.x SDK's low-level Server,
 * one per request): the same tools, order and calls as in a 2025-era session (GatewayTools), the call's progress sent
 * as the request's own notifications when it carried a progress token. A remote tool that needs input first reaches
 * the agent as an `input_required` result whose `requestState` is this node's, sealed (the SDK's HMAC codec, bound to
 * the agent, 10 minutes): it holds the call's peer and tool and the state call_remote_tool gave. The agent's retry
 * (its `inputResponses` and that state, verified by the SDK before the handler runs) becomes call_remote_tool's
 * retry, for the same peer and tool only.
 */
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import type {
  CallToolResult,
  ListToolsResult,
  RequestStateCodec,
  Server,
  ServerContext,
} from "@modelcontextprotocol/server"
import { Effect, Runtime } from "effect"
import type { z } from "zod"
import type { Caller, Federation } from "../../../services/federation/Federation.js"
import type { Progress } from "../../../services/mcp/PeerMcp.js"
import * as GatewayTools from "../GatewayTools.js"
import * as Tool from "../Tool.js"

const progressTo = (ctx: ServerContext): ((progress: Progress) => void) | undefined => {
  const token = ctx.mcpReq._meta?.progressToken
  if (token === undefined) return undefined
  return (progress) => {
    ctx.mcpReq
      .notify({ method: "notifications/progress", params: Tool.progressParams(token, progress) })
      .catch(() => undefined)
  }
}

const callOf = (ctx: ServerContext): Tool.Call => {
  const onProgress = progressTo(ctx)
  const headers: Record<string, string> = {}
  ctx.http?.req?.headers.forEach((value, name) => {
    headers[name] = value
  })
  return { headers, signal: ctx.mcpReq.signal, ...(onProgress === undefined ? {} : { onProgress }) }
}

/** What the node's sealed `requestState` holds. */
export interface Carried {
  readonly state: string
  readonly peerId: string
  readonly toolName: string
}

const CALL_REMOTE_TOOL = "call_remote_tool"

export const install = <R>(
  server: Server,
  runtime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  definitions: ReadonlyArray<McpTool>,
  caller: Caller,
  codec: RequestStateCodec<Carried>,
): void => {
  const run = Runtime.runPromise(runtime)
  server.setRequestHandler("tools/list", () =>
    // The 1.x SDK's tool type, in which the definitions are made, types JSON schemas more loosely: same shape.
    run(Effect.map(GatewayTools.list(definitions, caller), (listed) => ({ tools: [...listed] }) as ListToolsResult)),
  )
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const name = request.params.name
    let args = request.params.arguments
    const carried = ctx.mcpReq.requestState<Carried>()
    if (name === CALL_REMOTE_TOOL && (carried !== undefined || ctx.mcpReq.inputResponses !== undefined)) {
      if (carried === undefined) return Tool.refused("inputResponses without the requestState this node gave")
      if (carried.peerId !== args?.peer_id || carried.toolName !== args?.tool_name) {
        return Tool.refused("the requestState belongs to another call (peer_id and tool_name must stay the same)")
      }
      args = GatewayTools.retryArguments(args, ctx.mcpReq.inputResponses ?? {}, carried.state)
    }
    const result = await GatewayTools.call(runtime, tools, caller, name, args, callOf(ctx))
    const asked = name === CALL_REMOTE_TOOL ? GatewayTools.asked(result) : undefined
    if (asked === undefined) return result as CallToolResult
    const requestState = await codec.mint(
      { state: asked.requestState, peerId: asked.peerId, toolName: asked.toolName },
      ctx,
    )
    return { resultType: "input_required", inputRequests: asked.inputRequests, requestState } as never
  })
}

/**
 * `tools/list` and `tools/call` of the node's MCP server for a 2026-07-28 request (the 2.x SDK's low-level Server,
 * one per request): the same tools, order and calls as in a 2025-era session (GatewayTools), the call's progress sent
 * as the request's own notifications when it carried a progress token.
 */
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import type { CallToolResult, ListToolsResult, Server, ServerContext } from "@modelcontextprotocol/server"
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

export const install = <R>(
  server: Server,
  runtime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  definitions: ReadonlyArray<McpTool>,
  caller: Caller,
): void => {
  const run = Runtime.runPromise(runtime)
  server.setRequestHandler("tools/list", () =>
    // The 1.x SDK's tool type, in which the definitions are made, types JSON schemas more loosely: same shape.
    run(Effect.map(GatewayTools.list(definitions, caller), (listed) => ({ tools: [...listed] }) as ListToolsResult)),
  )
  server.setRequestHandler(
    "tools/call",
    async (request, ctx) =>
      (await GatewayTools.call(
        runtime,
        tools,
        caller,
        request.params.name,
        request.params.arguments,
        callOf(ctx),
      )) as CallToolResult,
  )
}

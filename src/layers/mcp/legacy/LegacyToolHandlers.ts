/**
 * `tools/list` and `tools/call` of one 2025-era session of the node's MCP server (the 1.x SDK's low-level Server):
 * the node's own tools first, then the federated ones this caller may see (Federation, FederationScope). A federated
 * tool's call goes to Federation with the client's progress token honoured; a name that is neither, a federated tool
 * this caller may not see or one no longer listed included, is a tool error.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool as McpTool,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, Runtime } from "effect"
import type { z } from "zod"
import type { Caller, Federation } from "../../../services/federation/Federation.js"
import type { Progress } from "../../../services/mcp/PeerMcp.js"
import * as GatewayTools from "../GatewayTools.js"
import * as Tool from "../Tool.js"

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** Hands progress on to the client, when its request asked for it (a progress token). */
const progressTo = (extra: Extra): ((progress: Progress) => void) | undefined => {
  const token = extra._meta?.progressToken
  if (token === undefined) return undefined
  return (progress) => {
    extra
      .sendNotification({ method: "notifications/progress", params: Tool.progressParams(token, progress) })
      .catch(() => undefined)
  }
}

const callOf = (extra: Extra): Tool.Call => {
  const onProgress = progressTo(extra)
  return {
    headers: extra.requestInfo?.headers ?? {},
    signal: extra.signal,
    ...(onProgress === undefined ? {} : { onProgress }),
  }
}

export const install = <R>(
  server: Server,
  runtime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  definitions: ReadonlyArray<McpTool>,
  caller: Caller,
): void => {
  const run = Runtime.runPromise(runtime)

  server.setRequestHandler(ListToolsRequestSchema, () =>
    run(Effect.map(GatewayTools.list(definitions, caller), (listed) => ({ tools: [...listed] }))),
  )

  server.setRequestHandler(
    CallToolRequestSchema,
    (request, extra): Promise<CallToolResult> =>
      GatewayTools.call(runtime, tools, caller, request.params.name, request.params.arguments, callOf(extra)),
  )
}

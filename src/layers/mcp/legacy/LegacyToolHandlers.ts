/**
 * `tools/list` and `tools/call` of one 2025-era session of the node's MCP server (the 1.x SDK's low-level Server):
 * the node's own tools first, then the federated ones this caller may see (Federation, FederationScope). A federated
 * tool's call goes to Federation with the client's progress token honoured; a name that is neither, a federated tool
 * this caller may not see or one no longer listed included, is a tool error. A remote tool that needs input first
 * (`input_required`) is answered here: each of its requests goes to the agent as the request a 2025-era server
 * would have sent in the session (`elicitation/create`, `sampling/createMessage`, `roots/list`), and the answers go
 * back on call_remote_tool's retry, round after round (at most InputRequired.MAX_ROUNDS). An agent that declared
 * no capability for one of the requests gets the result as call_remote_tool presents it (the requests, and the
 * `request_state` to answer them with on its own retry); one that fails a request gets a tool error saying so.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  type Tool as McpTool,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, Runtime } from "effect"
import type { z } from "zod"
import * as InputRequired from "../../../domain/InputRequired.js"
import type { Caller, Federation } from "../../../services/federation/Federation.js"
import type { Progress } from "../../../services/mcp/PeerMcp.js"
import * as GatewayTools from "../GatewayTools.js"
import * as Tool from "../Tool.js"

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** How long the agent may take to answer one request (a person may be asked). */
const ANSWER_TIMEOUT_MS = 10 * 60 * 1000

const RESULTS = {
  "elicitation/create": ElicitResultSchema,
  "sampling/createMessage": CreateMessageResultSchema,
  "roots/list": ListRootsResultSchema,
} as const

/** The agent's answers to `asked`'s requests, by key; a sentence when it cannot give them. */
const answers = async (
  asked: GatewayTools.Asked,
  extra: Extra,
): Promise<{ readonly ok: Record<string, unknown> } | { readonly refused: string }> => {
  const ok: Record<string, unknown> = {}
  for (const [key, request] of Object.entries(asked.inputRequests)) {
    const schema = RESULTS[request.method as keyof typeof RESULTS]
    if (schema === undefined) return { refused: `the tool asked for input by an unknown method (${request.method})` }
    try {
      ok[key] = await extra.sendRequest({ method: request.method, params: request.params } as ServerRequest, schema, {
        signal: extra.signal,
        timeout: ANSWER_TIMEOUT_MS,
      })
    } catch (error) {
      return {
        refused:
          `the tool needs input (${request.method}) that this client did not give: ${error instanceof Error ? error.message : String(error)}`.slice(
            0,
            1024,
          ),
      }
    }
  }
  return { ok }
}

/** Whether the session's client declared what each request of `asked` needs. */
const canAnswer = (server: Server, asked: GatewayTools.Asked): boolean => {
  const declared = server.getClientCapabilities() ?? {}
  return Object.values(asked.inputRequests).every((request) =>
    request.method === "elicitation/create"
      ? declared.elicitation !== undefined
      : request.method === "sampling/createMessage"
        ? declared.sampling !== undefined
        : request.method === "roots/list"
          ? declared.roots !== undefined
          : false,
  )
}

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

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params
    const call = (args: Record<string, unknown> | undefined) =>
      GatewayTools.call(runtime, tools, caller, name, args, callOf(extra))
    let result = await call(request.params.arguments)
    for (let round = 0; round < InputRequired.MAX_ROUNDS; round++) {
      const asked = name === "call_remote_tool" ? GatewayTools.asked(result) : undefined
      if (asked === undefined || !canAnswer(server, asked)) return result
      const given = await answers(asked, extra)
      if ("refused" in given) return Tool.refused(given.refused)
      result = await call(GatewayTools.retryArguments(request.params.arguments, given.ok, asked.requestState))
    }
    return GatewayTools.asked(result) === undefined
      ? result
      : Tool.refused(`the tool asked for input more than ${InputRequired.MAX_ROUNDS} times`)
  })
}

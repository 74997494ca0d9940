/**
 * `tools/list` and `tools/call` of one session of the node's MCP server (the SDK's low-level Server): the node's own
 * tools first, then the federated ones this caller may see (Federation, FederationScope). A federated tool's call
 * goes to Federation with the client's progress token honoured; a name that is neither, a federated tool this caller
 * may not see or one no longer listed included, is a tool error.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, Option, Runtime } from "effect"
import type { z } from "zod"
import { type Caller, Federation } from "../../services/federation/Federation.js"
import * as Tool from "./Tool.js"

export const install = <R>(
  server: Server,
  runtime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  definitions: ReadonlyArray<McpTool>,
  caller: Caller,
): void => {
  const run = Runtime.runPromise(runtime)
  const own = new Map(tools.map((tool) => [tool.name, tool]))

  server.setRequestHandler(ListToolsRequestSchema, () =>
    run(
      Effect.map(
        Effect.flatMap(Federation, (federation) => federation.list(caller)),
        (federated) => ({
          tools: [...definitions, ...federated.map((t) => t.definition)],
        }),
      ),
    ),
  )

  server.setRequestHandler(CallToolRequestSchema, (request, extra): Promise<CallToolResult> => {
    const name = request.params.name
    const tool = own.get(name)
    if (tool !== undefined) return Tool.invoke(runtime, tool, request.params.arguments, extra)
    const federated = Effect.gen(function* () {
      const federation = yield* Federation
      const found = yield* federation.lookup(caller, name)
      if (Option.isNone(found)) return Tool.refused(`Tool ${name} not found`)
      return yield* federation.call(found.value, request.params.arguments ?? {}, Tool.progressTo(extra))
    })
    return run(Tool.traced(name, extra, federated), { signal: extra.signal })
  })
}

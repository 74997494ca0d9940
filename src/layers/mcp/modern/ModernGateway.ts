/**
 * The 2026-07-28 half of the node's `/mcp`, stateless, on the 2.x MCP SDK's `createMcpHandler` (strict: 2025-era
 * requests never reach it, McpGatewayLive sends them to legacy/). Every request gets a server of its own, running the
 * tools in the agent's scope when an agent sent it; the SDK answers `server/discover`, validates the per-request
 * `_meta` envelope and the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers against the body (-32602,
 * -32020, -32022 with the versions it serves), refuses what the revision removed, stamps `resultType` and the list's
 * cache hints, and serves `subscriptions/listen`, on which `toolsChanged` announces a change of the federated tools.
 */

import { randomBytes } from "node:crypto"
import type { ServerResponse } from "node:http"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import { createMcpHandler, createRequestStateCodec, type McpRequestContext, Server } from "@modelcontextprotocol/server"
import { Context, Effect, Runtime, type Scope } from "effect"
import type { z } from "zod"
import pkg from "../../../../package.json" with { type: "json" }
import { type Agent, CurrentAgent } from "../../../services/agents/CurrentAgent.js"
import type { Federation } from "../../../services/federation/Federation.js"
import * as Instructions from "../Instructions.js"
import type * as Tool from "../Tool.js"
import * as ModernTools from "./ModernTools.js"
import * as WebExchange from "./WebExchange.js"

/** Bytes of a request body read at the most (the 2025 era's transport has the same bound). */
export const MAX_BODY = 4 * 1024 * 1024
/** `subscriptions/listen` streams open at once, at the most (as many as 2025-era sessions). */
export const MAX_SUBSCRIPTIONS = 256
/**
 * How long a client may keep the tool list before asking again. Short: the federated tools follow the mesh, and a
 * client that listens hears of a change at once. Private: the list depends on the agent asking.
 */
export const LIST_TTL_MS = 10_000
/** How long an `input_required` answer's state is good for: a person may take a while to answer. */
export const STATE_TTL_SECONDS = 600

export interface ModernGateway {
  /** Serves one 2026-07-28 request, its body already read and parsed. */
  readonly handle: (
    exchange: WebExchange.Exchange,
    res: ServerResponse,
    agent: Agent | undefined,
    body: unknown,
  ) => Effect.Effect<void>
  /** Announces `notifications/tools/list_changed` on every listen stream that asked for it. */
  readonly toolsChanged: Effect.Effect<void>
}

const AGENT = "mesh/agent"

export const make = <R>(
  toolRuntime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  definitions: ReadonlyArray<McpTool>,
): Effect.Effect<ModernGateway, never, Scope.Scope> =>
  Effect.gen(function* () {
    // Sealed with a key of this process: a state from before a restart, or another agent's, is refused (-32602).
    const codec = createRequestStateCodec<ModernTools.Carried>({
      key: randomBytes(32),
      ttlSeconds: STATE_TTL_SECONDS,
      bind: (ctx) => ctx.http?.authInfo?.clientId ?? "",
    })
    const factory = (ctx: McpRequestContext) => {
      const agent = ctx.authInfo?.extra?.[AGENT] as Agent | undefined
      const server = new Server(
        { name: "mesh-node", version: pkg.version },
        {
          instructions: Instructions.text,
          capabilities: { tools: { listChanged: true } },
          cacheHints: { "tools/list": { ttlMs: LIST_TTL_MS, cacheScope: "private" } },
          requestState: { verify: codec.verify },
        },
      )
      const scoped =
        agent === undefined
          ? toolRuntime
          : Runtime.make({
              context: Context.add(toolRuntime.context, CurrentAgent, agent),
              runtimeFlags: toolRuntime.runtimeFlags,
              fiberRefs: toolRuntime.fiberRefs,
            })
      ModernTools.install(server, scoped, tools, definitions, agent === undefined ? {} : { scope: agent.scope }, codec)
      return server
    }
    const handler = createMcpHandler(factory, {
      legacy: "reject",
      maxRequestBodySize: MAX_BODY,
      maxSubscriptions: MAX_SUBSCRIPTIONS,
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => handler.close().catch(() => undefined)))

    const handle = (exchange: WebExchange.Exchange, res: ServerResponse, agent: Agent | undefined, body: unknown) =>
      Effect.promise(async () => {
        // The client gone before the answer: its request is aborted, a tool call in flight cancelled.
        const gone = () => exchange.abort()
        res.once("close", gone)
        try {
          const response = await handler.fetch(exchange.request, {
            parsedBody: body,
            ...(agent === undefined
              ? {}
              : { authInfo: { token: "", clientId: agent.scope.agent, scopes: [], extra: { [AGENT]: agent } } }),
          })
          await WebExchange.write(response, res)
        } catch {
          // The exchange ended without an answer (the client went away, the node stops).
          if (!res.headersSent && !res.closed) WebExchange.error(res, 500, -32603, "Internal error", null)
          else res.destroy()
        } finally {
          res.off("close", gone)
        }
      })

    return { handle, toolsChanged: Effect.sync(() => handler.notify.toolsChanged()) } satisfies ModernGateway
  })

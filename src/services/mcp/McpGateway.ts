/**
 * The node's MCP server for local agents (Streamable HTTP on `/mcp`): tools to see the mesh, find services and tools
 * on peers and call them. Both protocol eras on the one endpoint: 2026-07-28 requests are served statelessly, each on
 * its own; 2025-era clients get sessions (`Mcp-Session-Id`), kept until the client ends them or they idle out.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Context, type Effect } from "effect"
import type { Agent } from "../agents/CurrentAgent.js"

export interface McpGatewayService {
  /**
   * Serves one HTTP request of the MCP server on the raw Node request and response. A session opened for an agent
   * runs its tools in the agent's scope (CurrentAgent) and is used by that agent only.
   */
  readonly handle: (req: IncomingMessage, res: ServerResponse, agent?: Agent) => Effect.Effect<void>
  /** Open 2025-era sessions, for metrics and diagnostics. */
  readonly sessions: Effect.Effect<number>
}

export class McpGateway extends Context.Tag("mesh/McpGateway")<McpGateway, McpGatewayService>() {}

/**
 * The stdio MCP servers this node runs for its services with a `command` (serving side). Peers reach them like any
 * MCP service, over the proxy path (Streamable HTTP): each caller session gets a process of its own, started by its
 * initialize and kept while the session lives (a stdio server holds one session's state). At most the service's
 * `max_processes` run at once, half of them (rounded up) for one caller; a new session beyond that is refused with 503
 * (429 past the caller's share) until one ends.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Context, type Effect } from "effect"
import type * as McpGrant from "../../domain/McpGrant.js"
import type { ServiceSpec } from "../../domain/NodeFile.js"

export interface StdioServersService {
  /**
   * Serves one HTTP request of a caller's MCP session with the service; `caller` is the calling peer's id. A caller
   * holding single tools comes with its grant (the session's answers are cut to it) and the body already read and
   * checked, which is served in place of the request's.
   */
  readonly handle: (
    service: ServiceSpec,
    caller: string,
    req: IncomingMessage,
    res: ServerResponse,
    mcp?: { readonly grant: McpGrant.Grant; readonly message?: unknown },
  ) => Effect.Effect<void>
  /**
   * The service's tool names (its probe): listed by a process started for the purpose, or the last ones listed while
   * sessions keep its processes busy. Fails with a short reason when the server cannot be run or does not answer.
   */
  readonly tools: (service: ServiceSpec) => Effect.Effect<ReadonlyArray<string>, string>
  /** Processes running now, by service name. */
  readonly running: Effect.Effect<ReadonlyMap<string, number>>
}

export class StdioServers extends Context.Tag("mesh/StdioServers")<StdioServers, StdioServersService>() {}

/**
 * The node's MCP services, each built on its first use: the MCP SDK and the tools' schemas are loaded when an agent
 * first speaks MCP to the node, a tool of a peer is first listed or called, or a stdio server is first needed, not
 * when the node starts. A node that serves and calls no MCP (a model or agent host) never loads them (docs/scale.md,
 * "Idle weight"). Figures read before the first use are none: no sessions, no processes.
 */
import { Effect, Option } from "effect"
import * as Lazy from "../../platform/Lazy.js"
import { McpGateway } from "../../services/mcp/McpGateway.js"
import { PeerMcp } from "../../services/mcp/PeerMcp.js"
import { StdioServers } from "../../services/mcp/StdioServers.js"

/**
 * The MCP server for local agents (McpGatewayLive). PeerMcpLive's modules are loaded beside it: most of the gateway's
 * tools reach peers, and loading them is most of what an agent's first `call_remote_tool` would otherwise wait for.
 */
export const gateway = Lazy.service(
  McpGateway,
  () => Promise.all([import("./McpGatewayLive.js"), import("./PeerMcpLive.js")]).then(([module]) => module.layer),
  (use, peek) => ({
    handle: (req, res, agent) => Effect.flatMap(use, (real) => real.handle(req, res, agent)),
    sessions: Effect.flatMap(peek, Option.match({ onNone: () => Effect.succeed(0), onSome: (real) => real.sessions })),
  }),
)

/** Sessions with peers' MCP services (PeerMcpLive). */
export const peerMcp = Lazy.service(
  PeerMcp,
  () => import("./PeerMcpLive.js").then((module) => module.layer),
  (use, peek) => ({
    listTools: (peerId, service, timeout) => Effect.flatMap(use, (real) => real.listTools(peerId, service, timeout)),
    callTool: (peerId, service, tool, args, onProgress, retry) =>
      Effect.flatMap(use, (real) => real.callTool(peerId, service, tool, args, onProgress, retry)),
    sessions: Effect.flatMap(peek, Option.match({ onNone: () => Effect.succeed(0), onSome: (real) => real.sessions })),
  }),
)

/** The stdio MCP servers this node runs (StdioServersLive). */
export const stdioServers = Lazy.service(
  StdioServers,
  () => import("./StdioServersLive.js").then((module) => module.layer),
  (use, peek) => ({
    handle: (service, caller, req, res, mcp) =>
      Effect.flatMap(use, (real) => real.handle(service, caller, req, res, mcp)),
    tools: (service) => Effect.flatMap(use, (real) => real.tools(service)),
    running: Effect.flatMap(
      peek,
      Option.match({ onNone: () => Effect.succeed(new Map<string, number>()), onSome: (real) => real.running }),
    ),
  }),
)

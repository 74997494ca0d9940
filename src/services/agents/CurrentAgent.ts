/**
 * The agent a request is made for, when its caller presented an agent token: the local API's middleware provides it
 * to the handler, and whatever runs on the request's behalf (the proxy, the inference router, the MCP gateway's
 * tools, remote-tool federation) reads it with `Effect.serviceOption(CurrentAgent)` to scope what it lists and does,
 * and to carry the token to the serving peer. Absent: the caller holds the node's own API token (or the socket).
 */
import { Context, type Redacted } from "effect"
import type * as AgentScope from "../../domain/AgentScope.js"

export interface Agent {
  readonly scope: AgentScope.Scope
  /** The token as presented (base64), sent on to serving peers in `X-Mesh-Agent-Token`. */
  readonly token: Redacted.Redacted<string>
}

export class CurrentAgent extends Context.Tag("mesh/agents/CurrentAgent")<CurrentAgent, Agent>() {}

/** The header that carries an agent token from the agent's node to the serving peer; only a node sets it. */
export const TOKEN_HEADER = "x-mesh-agent-token"
/** The header that names the agent to a backend, set by the serving node from the token it verified. */
export const AGENT_HEADER = "x-mesh-agent"

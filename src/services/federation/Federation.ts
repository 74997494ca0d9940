/**
 * Federation: the remote MCP tools `federate:` in `mesh-node.yaml` asks for, listed on this node's `/mcp` as its
 * own tools (names and listings: `domain/Federation.ts`). The set follows the mesh (DHT providers and their catalogs,
 * gossip announcements, each provider's `tools/list`); a call goes to the best provider of the tool, and on to the
 * next when one cannot be reached.
 */

import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { Context, type Effect, type Option, type Stream } from "effect"
import type * as AgentScope from "../../domain/AgentScope.js"
import type { Progress } from "../mcp/PeerMcp.js"

/** A peer serving a federated tool. */
export interface Provider {
  readonly peerId: string
  /** What its credential attests. */
  readonly labels: Readonly<Record<string, string>>
  /** Requests it had in flight for the service when it last announced (0 when unknown). */
  readonly load: number
}

export interface FederatedTool {
  /** The tool's name on this node. */
  readonly name: string
  readonly service: string
  /** The tool's name on its peers. */
  readonly tool: string
  /** As `tools/list` shows it. */
  readonly definition: Tool
  readonly providers: ReadonlyArray<Provider>
}

/**
 * Who is asking, as far as the list is concerned. Empty for now: once agents have scopes, the agent goes here and
 * FederationScope decides on it.
 */
/** Who lists or calls: the agent's scope for an agent's session, nothing for the node's own token. */
export interface Caller {
  readonly scope?: AgentScope.Scope
}

export interface FederationService {
  /** The federated tools the caller may see, by name. */
  readonly list: (caller: Caller) => Effect.Effect<ReadonlyArray<FederatedTool>>
  /** One of them by its name on this node; none when it is not listed (or not for this caller). */
  readonly lookup: (caller: Caller, name: string) => Effect.Effect<Option.Option<FederatedTool>>
  /**
   * Calls it through the same path as `call_remote_tool`, on its best provider, then the next (at most three) when
   * one cannot be reached. The peer's result as it sent it; a refusal or failure is a tool error saying why.
   */
  readonly call: (
    tool: FederatedTool,
    args: Readonly<Record<string, unknown>>,
    onProgress?: (progress: Progress) => void,
  ) => Effect.Effect<CallToolResult>
  /** Emits each time the listed set (names or listings) changes. */
  readonly changes: Stream.Stream<void>
}

export class Federation extends Context.Tag("mesh/Federation")<Federation, FederationService>() {}

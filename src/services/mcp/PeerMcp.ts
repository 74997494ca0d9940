/**
 * MCP client sessions with the MCP services of peers: the caller side of MCP between peers, used by the MCP
 * gateway's tools. A session per (peer, service) is opened on first use over the proxy path (the MCP SDK client with
 * `PeerProxy.fetch` as its fetch, so the serving peer's policy applies to every request) and reused by later calls;
 * it is closed after a while unused, and opened again when the serving side has forgotten it.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { Context, Data, type Duration, type Effect } from "effect"

export type PeerMcpFailure =
  /** The serving peer's policy, a label requirement or the operator's egress floor refused it. */
  | "refused"
  /** The peer or its service could not be reached now; trying again later may work. */
  | "unreachable"
  /** The peer has no such MCP service. */
  | "not_found"
  /** Anything else: a protocol error, an error answer from the server, a timeout. */
  | "failed"

/** A progress notification of a call under way, as the server sent it. */
export interface Progress {
  readonly progress: number
  readonly total?: number
  readonly message?: string
}

/** Why an exchange with a peer's MCP service did not happen; `message` is for people and holds no secret. */
export class PeerMcpError extends Data.TaggedError("PeerMcpError")<{
  readonly reason: PeerMcpFailure
  readonly message: string
}> {}

export interface PeerMcpService {
  /** Every tool the service lists (up to a thousand), within `timeout`. */
  readonly listTools: (
    peerId: string,
    service: string,
    timeout: Duration.DurationInput,
  ) => Effect.Effect<ReadonlyArray<Tool>, PeerMcpError>
  /**
   * Calls a tool; its result comes back as the server sent it, a tool error (`isError`) included. With
   * `onProgress`, the call asks for progress notifications and hands each on as it arrives.
   */
  readonly callTool: (
    peerId: string,
    service: string,
    tool: string,
    args: Readonly<Record<string, unknown>>,
    onProgress?: (progress: Progress) => void,
  ) => Effect.Effect<CallToolResult, PeerMcpError>
  /** Sessions open now. */
  readonly sessions: Effect.Effect<number>
}

export class PeerMcp extends Context.Tag("mesh/PeerMcp")<PeerMcp, PeerMcpService>() {}

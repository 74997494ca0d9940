/**
 * MCP with the MCP services of peers: the caller side of MCP between peers, used by the MCP gateway's tools, over
 * the proxy path (`PeerProxy.fetch`, so the serving peer's policy applies to every request). A modern (2026-07-28)
 * service gets self-describing requests, one per exchange; a legacy one a session per (peer, service), opened on
 * first use and reused by later calls, closed after a while unused, and opened again when the serving side has
 * forgotten it. Which era a service speaks is found out per (peer, service) and remembered (PeerMcpLive).
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Data, type Duration, type Effect } from "effect"
import type { Listed } from "../../domain/PeerTools.js"

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

/**
 * What a modern (2026-07-28) tool answers when it needs its caller's input first (a multi round-trip request): the
 * requests to put to the user (an elicitation, a sampling, roots) by key, and the opaque state to send back with the
 * answers on the retry. Checked and capped when it arrives (domain/InputRequired).
 */
export interface InputRequired {
  readonly resultType: "input_required"
  readonly inputRequests?: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>> | undefined
  readonly requestState?: string | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}

/** A remote tool's result as received and checked: complete, or asking for input first. */
export type RemoteResult = CallToolResult | InputRequired

/**
 * What a modern call carries besides its arguments: on the retry of a call that answered `input_required`, the
 * answers by key and its `requestState` echoed; and the client capabilities declared for it (what input the caller
 * can get answered: InputRequired.RELAYED_CAPABILITIES unless the caller says otherwise).
 */
export interface Retry {
  readonly inputResponses?: Readonly<Record<string, unknown>>
  readonly requestState?: string
  readonly clientCapabilities?: Readonly<Record<string, unknown>>
}

export const isInputRequired = (result: RemoteResult): result is InputRequired =>
  (result as { resultType?: unknown }).resultType === "input_required"

/** Why an exchange with a peer's MCP service did not happen; `message` is for people and holds no secret. */
export class PeerMcpError extends Data.TaggedError("PeerMcpError")<{
  readonly reason: PeerMcpFailure
  readonly message: string
}> {}

/** What a service lists: its tools, and the caching hint a modern server gave with them. */
export interface ToolList {
  /** Each bounded and cleaned, beside its definition as the provider sent it (tool pinning judges that). */
  readonly tools: ReadonlyArray<Listed>
  /**
   * The `ttlMs` the result carried (the smallest of its pages'), as the peer sent it: unchecked, to be bounded by
   * domain/ListingFreshness before use; none from a 2025-era server, or a modern one that gave none.
   */
  readonly ttlMs?: number | undefined
}

export interface PeerMcpService {
  /**
   * Every tool the service lists (up to a thousand), within `timeout`: each bounded and cleaned, beside its definition
   * as the provider sent it (tool pinning judges that).
   */
  readonly listTools: (
    peerId: string,
    service: string,
    timeout: Duration.DurationInput,
  ) => Effect.Effect<ToolList, PeerMcpError>
  /**
   * Calls a tool; its result comes back as the server sent it, a tool error (`isError`) included, or, from a modern
   * server, `input_required`. With `onProgress`, the call asks for progress notifications and hands each on as it
   * arrives; with `retry`, it is the retry of a call that answered `input_required`.
   */
  readonly callTool: (
    peerId: string,
    service: string,
    tool: string,
    args: Readonly<Record<string, unknown>>,
    onProgress?: (progress: Progress) => void,
    retry?: Retry,
  ) => Effect.Effect<RemoteResult, PeerMcpError>
  /** Sessions open now. */
  readonly sessions: Effect.Effect<number>
}

export class PeerMcp extends Context.Tag("mesh/PeerMcp")<PeerMcp, PeerMcpService>() {}

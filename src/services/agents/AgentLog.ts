/**
 * The agents' call log: one line per call an agent made through this node (and per call this node served for a
 * peer's agent), never arguments, prompts or results. Kept in the data folder with rotation, read over the socket
 * (`GET /agents/log`), counted in `mesh_node_agent_calls_total{agent,outcome}`.
 */
import { Context, type Effect, Schema } from "effect"

export const Outcome = Schema.Literal("allowed", "denied", "error")
export type Outcome = typeof Outcome.Type

export const Entry = Schema.Struct({
  /** RFC 3339, milliseconds. */
  time: Schema.String,
  agent: Schema.String,
  /** `local`: this node's agent; `serving`: a peer's agent, verified here. */
  side: Schema.Literal("local", "serving"),
  /** The serving peer (local side) or the calling peer (serving side); empty when the call never left the node. */
  peer: Schema.String,
  /** `type://name`, or empty. */
  service: Schema.String,
  /** The tool (`mcp://svc/tool`) or model called, or empty. */
  target: Schema.String,
  outcome: Outcome,
  /** The rule that refused it (`scope.tools`, `allowed_services`, ...) or the error's kind; empty when allowed. */
  rule: Schema.String,
  status: Schema.Number,
  duration_ms: Schema.Number,
  bytes_in: Schema.Number,
  bytes_out: Schema.Number,
})
export type Entry = typeof Entry.Type

/** What a caller records; the time is the log's. */
export type Call = Omit<Entry, "time">

export interface Filter {
  readonly agent?: string
  /** Unix milliseconds, inclusive. */
  readonly sinceMs?: number
  readonly untilMs?: number
  readonly limit: number
}

export interface AgentLogService {
  readonly record: (call: Call) => Effect.Effect<void>
  /** The newest entries matching the filter, oldest first. */
  readonly read: (filter: Filter) => Effect.Effect<ReadonlyArray<Entry>>
}

export class AgentLog extends Context.Tag("mesh/agents/AgentLog")<AgentLog, AgentLogService>() {}

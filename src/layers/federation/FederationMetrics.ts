/**
 * Federation's figures (`mesh_node_federated_*`), per federated tool by its name on this node, never its
 * arguments. Names are bounded: only listed tools are counted (Round.MAX_TOOLS at most).
 */
import type { MetricsRegistry } from "../../services/operations/Metrics.js"

/** From 5 ms to 10 minutes: tool calls may run long while they report progress. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600]

export type Outcome =
  /** The peer's result, not a tool error. */
  | "ok"
  /** The peer's result, a tool error. */
  | "tool_error"
  /** A label requirement, the egress floor or the serving peer's policy refused it. */
  | "refused"
  /** No provider could be reached. */
  | "unreachable"
  | "failed"

export const make = (metrics: MetricsRegistry) => {
  const calls = metrics.counter(
    "mesh_node_federated_tool_calls_total",
    "Calls of federated tools on this node's /mcp, by tool name and outcome (ok, tool_error, refused, unreachable, failed).",
  )
  const duration = metrics.histogram(
    "mesh_node_federated_tool_call_duration_seconds",
    "Calls of federated tools from arrival to result, by tool name, in seconds.",
    DURATION_BUCKETS,
  )
  const fallbacks = metrics.counter(
    "mesh_node_federated_tool_fallbacks_total",
    "Providers of a federated tool passed over for the next one because they could not be reached, by tool name.",
  )
  const listed = metrics.gauge("mesh_node_federated_tools", "Federated tools listed on this node's /mcp now.")
  return {
    called: (tool: string, outcome: Outcome, seconds: number) => {
      calls.inc({ tool, outcome })
      duration.observe({ tool }, seconds)
    },
    fellBack: (tool: string) => fallbacks.inc({ tool }),
    listed: (count: number) => listed.set({}, count),
  }
}

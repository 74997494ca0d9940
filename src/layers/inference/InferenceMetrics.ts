/**
 * The inference router's figures (`mesh_node_inference_*`). Label values stay bounded: `model` is a model some
 * provider lists (a request for any other is counted under `unknown`), `provider` a serving peer's id (`none` when
 * the node answered itself), and the rest come from short fixed lists. No path, body or header reaches a label.
 */
import type { MetricsRegistry } from "../../services/operations/Metrics.js"

/** From 10 ms to 5 minutes: completions are slow, and streamed ones last as long as their answer. */
const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
/** From 0.1 ms to 1 s: what the node adds before the first byte. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

export const UNKNOWN_MODEL = "unknown"
export const NO_PROVIDER = "none"

export type ErrorReason =
  | "model_not_found"
  | "no_eligible_provider"
  | "no_available_provider"
  /** The provider answered with an error status (passed on as it was). */
  | "provider_error"
  /** The answer did not reach its end: the client went away or the provider's answer was cut off. */
  | "incomplete"

export type FallbackReason =
  | "status_403"
  | "status_404"
  | "status_429"
  | "status_500"
  | "status_502"
  | "status_503"
  | "status_504"
  /** Any other 5xx. */
  | "status_5xx"
  | "connection"
  /** No response head within the time-to-headers limit. */
  | "timeout"
  | "labels"
  /** This node's copy of the policy does not let it call the provider: nothing was sent. */
  | "policy"

const STATUS_REASONS: Readonly<Record<number, FallbackReason>> = {
  403: "status_403",
  404: "status_404",
  429: "status_429",
  500: "status_500",
  502: "status_502",
  503: "status_503",
  504: "status_504",
}

/** Why a provider was passed over, as a label value. */
export const fallbackReason = (
  failure:
    | { readonly _tag: "Status"; readonly status: number }
    | { readonly _tag: "Connection" | "Timeout" | "Labels" | "Policy" },
): FallbackReason =>
  failure._tag === "Status"
    ? (STATUS_REASONS[failure.status] ?? "status_5xx")
    : failure._tag === "Connection"
      ? "connection"
      : failure._tag === "Timeout"
        ? "timeout"
        : failure._tag === "Labels"
          ? "labels"
          : "policy"

export const make = (metrics: MetricsRegistry) => {
  const requests = metrics.counter(
    "mesh_node_inference_requests_total",
    "Completion requests, by model, serving provider (peer id; none when no provider answered) and status code.",
  )
  const errors = metrics.counter(
    "mesh_node_inference_errors_total",
    "Completion requests that failed, by model, provider and reason (model_not_found, no_eligible_provider, " +
      "no_available_provider, provider_error, incomplete).",
  )
  const duration = metrics.histogram(
    "mesh_node_inference_request_duration_seconds",
    "Completion requests from arrival to the end of the answer, by model and serving provider, in seconds.",
    DURATION_BUCKETS,
  )
  const overhead = metrics.histogram(
    "mesh_node_inference_overhead_seconds",
    "What the node added before the answer's first byte (X-Mesh-Overhead-Ms), by locality (local, remote).",
    OVERHEAD_BUCKETS,
  )
  const fallbacks = metrics.counter(
    "mesh_node_inference_fallbacks_total",
    "Providers passed over for the next one, by model, provider and reason (status_429, status_502, status_503, " +
      "status_504, connection, labels).",
  )
  const tokens = metrics.counter(
    "mesh_node_inference_tokens_total",
    "Tokens the answers' usage reported, by model, serving provider and type (prompt, completion).",
  )
  return {
    answered: (
      model: string,
      provider: string,
      status: number,
      seconds: number,
      complete: boolean,
      usage: { readonly promptTokens: number; readonly completionTokens: number } | undefined,
    ) => {
      requests.inc({ model, provider, code: String(status) })
      duration.observe({ model, provider }, seconds)
      if (status >= 400) errors.inc({ model, provider, reason: "provider_error" })
      else if (!complete) errors.inc({ model, provider, reason: "incomplete" })
      if (usage !== undefined) {
        tokens.inc({ model, provider, type: "prompt" }, usage.promptTokens)
        tokens.inc({ model, provider, type: "completion" }, usage.completionTokens)
      }
    },
    refused: (model: string, status: number, reason: ErrorReason, seconds: number) => {
      requests.inc({ model, provider: NO_PROVIDER, code: String(status) })
      duration.observe({ model, provider: NO_PROVIDER }, seconds)
      errors.inc({ model, provider: NO_PROVIDER, reason })
    },
    overhead: (local: boolean, seconds: number) =>
      overhead.observe({ locality: local ? "local" : "remote" }, Math.max(0, seconds)),
    fallback: (model: string, provider: string, reason: FallbackReason) => fallbacks.inc({ model, provider, reason }),
  }
}

export type InferenceMetrics = ReturnType<typeof make>

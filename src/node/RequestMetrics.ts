/**
 * The local API's request metrics, one set per node: the middleware and the front answer requests of the same
 * API, so they write the same series through this one object instead of registering them each.
 */
import { Effect, Ref } from "effect"
import { LATENCY_BUCKETS, Metrics } from "../services/operations/Metrics.js"

export interface RequestMetrics {
  /** `mesh_node_http_requests_in_flight` up and down by one. */
  readonly enter: Effect.Effect<void>
  readonly leave: Effect.Effect<void>
  /** One finished request of `route`: its status (499 when the client went away first) and how long it took. */
  readonly record: (route: string, code: number, seconds: number) => void
}

export const make: Effect.Effect<RequestMetrics, never, Metrics> = Effect.gen(function* () {
  const metrics = yield* Metrics
  const gauge = metrics.gauge("mesh_node_http_requests_in_flight", "Local API requests being served now.")
  const requests = metrics.counter("mesh_node_http_requests_total", "Local API requests by route and status code.")
  const latency = metrics.histogram(
    "mesh_node_http_request_duration_seconds",
    "Local API request duration by route, in seconds (streams count until they end).",
    LATENCY_BUCKETS,
  )
  const active = yield* Ref.make(0)
  const move = (by: number) =>
    Effect.flatMap(
      Ref.updateAndGet(active, (n) => n + by),
      (n) => Effect.sync(() => gauge.set({}, n)),
    )
  return {
    enter: move(1),
    leave: move(-1),
    record: (route, code, seconds) => {
      requests.inc({ route, code: String(code) })
      latency.observe({ route }, seconds)
    },
  }
})

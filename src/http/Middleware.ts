/**
 * The middleware around every control-plane route: renders failures into the one error body, and counts and times
 * each request by route pattern and status for /metrics.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect } from "effect"
import { LATENCY_BUCKETS, Metrics } from "../services/operations/Metrics.js"
import { ControlPlaneApi } from "./Api.js"
import * as ErrorResponse from "./ErrorResponse.js"
import { makeMatcher } from "./RouteLabels.js"

/** Probes and scrapes are not counted, so dashboards show traffic rather than monitoring. */
const UNCOUNTED = new Set(["/healthz", "/readyz", "/metrics"])

export const layer = HttpApiBuilder.middleware(
  Effect.gen(function* () {
    const metrics = yield* Metrics
    const requests = metrics.counter(
      "mesh_control_plane_http_requests_total",
      "HTTP requests by route and status code.",
    )
    const latency = metrics.histogram(
      "mesh_control_plane_http_request_duration_seconds",
      "HTTP request latency by route, in seconds.",
      LATENCY_BUCKETS,
    )
    const routeOf = makeMatcher(ControlPlaneApi)
    return (app) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const started = yield* Clock.currentTimeNanos
        const path = pathname(request.url)
        let response = yield* Effect.catchAllCause(app, ErrorResponse.fromCause)
        // Operator and user answers carry secrets (token values) or personal data: never cache them.
        if (
          (path.startsWith("/admin/") || path.startsWith("/user/")) &&
          response.headers["cache-control"] === undefined
        ) {
          response = HttpServerResponse.setHeader(response, "cache-control", "no-store")
        }
        const route = routeOf(request.method, path)
        if (!UNCOUNTED.has(route)) {
          const elapsed = Number((yield* Clock.currentTimeNanos) - started) / 1e9
          requests.inc({ route, code: String(response.status) })
          latency.observe({ route }, elapsed)
        }
        return response
      })
  }),
)

const pathname = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

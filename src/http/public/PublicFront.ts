/**
 * `GET /info` and `GET /keys` answered on node:http ahead of the API (`Listener.Front`): every member polls them, and
 * their answer is bytes already in memory, so the platform's fiber, router and response conversion would be most of
 * what each request costs. The answer is the one the API route gives (same status, headers and bytes) and is counted
 * in the same metrics. Whatever is not a plain hit goes on to the API untouched: another method, a query, a body, a
 * request while tracing is on (the middleware makes its server span), or an answer the service would have to
 * compute (a database read, whose errors the API renders).
 */
import { performance } from "node:perf_hooks"
import { Effect, Exit, FiberRef, FiberRefs, Option, Runtime } from "effect"
import { KeyRing } from "../../services/identity/KeyRing.js"
import { LATENCY_BUCKETS, Metrics } from "../../services/operations/Metrics.js"
import { Info } from "../../services/routers/Info.js"
import type { Front } from "../Listener.js"
import * as Protobuf from "../Protobuf.js"

export const make: Effect.Effect<Front, never, Info | KeyRing | Metrics> = Effect.gen(function* () {
  const info = yield* Info
  const keyRing = yield* KeyRing
  const metrics = yield* Metrics
  const runtime = yield* Effect.runtime<never>()
  if (FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentTracerEnabled)) return () => false
  // The same series the middleware writes (`Middleware.ts`); registering one again returns it.
  const requests = metrics.counter("mesh_control_plane_http_requests_total", "HTTP requests by route and status code.")
  const latency = metrics.histogram(
    "mesh_control_plane_http_request_duration_seconds",
    "HTTP request latency by route, in seconds.",
    LATENCY_BUCKETS,
  )
  const runSyncExit = Runtime.runSyncExit(runtime)
  const routes = new Map<string, Effect.Effect<Option.Option<Uint8Array>>>([
    ["/info", info.cached],
    ["/keys", Effect.map(keyRing.keysBody, Option.some)],
  ])
  return (request, response) => {
    if (request.method !== "GET") return false
    const route = request.url ?? ""
    const body = routes.get(route)
    if (body === undefined) return false
    const headers = request.headers
    if (headers["content-length"] !== undefined || headers["transfer-encoding"] !== undefined) return false
    const started = performance.now()
    const exit = runSyncExit(body)
    if (Exit.isFailure(exit) || Option.isNone(exit.value)) return false
    const bytes = exit.value.value
    response.writeHead(200, { "content-type": Protobuf.CONTENT_TYPE, "content-length": bytes.length })
    response.end(bytes)
    requests.inc({ route, code: "200" })
    latency.observe({ route }, (performance.now() - started) / 1000)
    return true
  }
})

/**
 * The middleware around every control-plane route. It decides which route a request is for (`RouteTable`) and
 * answers 404 itself when there is none, so the router only ever sees requests that every check below recognised;
 * then it refuses bodies no route reads, applies the enrollment rate limit, renders failures into the one error body,
 * marks operator and user answers no-store, and counts and times each request by route pattern and status. Each
 * request is one server span named by method and route pattern (never the raw path), continuing the caller's
 * `traceparent`.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Clock, Effect, Option } from "effect"
import { ControlPlaneConfig } from "../config/ControlPlaneConfig.js"
import { RateLimited } from "../domain/Errors.js"
import { LATENCY_BUCKETS, Metrics } from "../services/operations/Metrics.js"
import { RateLimiter } from "../services/operations/RateLimiter.js"
import { ControlPlaneApi } from "./Api.js"
import * as ErrorResponse from "./ErrorResponse.js"
import * as RouteTable from "./RouteTable.js"
import * as TraceContext from "./TraceContext.js"

/** The encodings our routes read; anything else (forms, multipart) is refused before a parser touches it. */
const BODY_TYPES = new Set(["application/json", "application/x-protobuf", "application/octet-stream"])

/** An early answer for a body we will not read: too large (413) or of a type no route takes (415). */
const refuseBody = (
  request: HttpServerRequest.HttpServerRequest,
  maxBody: number,
): HttpServerResponse.HttpServerResponse | undefined => {
  const length = Number(request.headers["content-length"] ?? "0")
  if (length > maxBody) return ErrorResponse.body(413, "payload_too_large", "request body too large")
  const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase()
  if (type === undefined || type === "" || BODY_TYPES.has(type)) return undefined
  if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return undefined
  return ErrorResponse.body(415, "unsupported_media_type", `content type ${type.slice(0, 64)} is not accepted`)
}

/**
 * The unauthenticated routes that cost the control plane a signature check each, or a request to the OIDC issuer
 * (the console's code exchange): rate limited per client.
 */
const LIMITED_ROUTES = new Set(["/register", "/enroll", "/enroll/status", "/console/sign-in/token"])

/** The metrics label of a request no route takes (answered 404 here, before the router). */
const UNMATCHED = "unmatched"

/**
 * `/console/` is how people type a page's address; every path has one spelling, so it is sent to `/console` (308)
 * rather than served under a second one or refused with 404.
 */
const consoleWithSlash = (request: HttpServerRequest.HttpServerRequest) => {
  if (request.method !== "GET" && request.method !== "HEAD") return undefined
  const q = request.url.indexOf("?")
  const path = q === -1 ? request.url : request.url.slice(0, q)
  return path === "/console/"
    ? HttpServerResponse.empty({
        status: 308,
        headers: { location: `/console${q === -1 ? "" : request.url.slice(q)}` },
      })
    : undefined
}

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
    const routes = RouteTable.fromApi(ControlPlaneApi)
    const maxBody = (yield* ControlPlaneConfig).maxBodyBytes
    const limiter = yield* RateLimiter
    /** A 429 for a client over its enrollment budget. */
    const limit = (route: string, request: HttpServerRequest.HttpServerRequest) =>
      LIMITED_ROUTES.has(route)
        ? Effect.map(limiter.take(Option.getOrElse(request.remoteAddress, () => "unknown")), (wait) =>
            Option.isNone(wait)
              ? undefined
              : ErrorResponse.fromApiError(
                  new RateLimited({
                    message: "too many enrollment requests; retry later",
                    retryAfterSeconds: wait.value,
                  }),
                ),
          )
        : Effect.succeed(undefined)
    return (app: HttpApp.Default) => {
      const serve = Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const started = yield* Clock.currentTimeNanos
        const route = routes.resolve(request.method, request.url) ?? UNMATCHED
        return yield* handle(request, route, started).pipe(TraceContext.serverSpan(request, route))
      })
      const handle = (request: HttpServerRequest.HttpServerRequest, route: string, started: bigint) =>
        Effect.gen(function* () {
          const refused =
            route === UNMATCHED
              ? (consoleWithSlash(request) ?? ErrorResponse.body(404, "not_found", "no such route"))
              : (refuseBody(request, maxBody) ?? (yield* limit(route, request)))
          let response =
            refused ??
            (yield* app.pipe(
              HttpIncomingMessage.withMaxBodySize(Option.some(FileSystem.Size(maxBody))),
              Effect.catchAllCause(ErrorResponse.fromCause),
            ))
          // Operator and user answers carry secrets (token values) or personal data: never cache them.
          if (
            (route.startsWith("/admin/") || route.startsWith("/user/")) &&
            response.headers["cache-control"] === undefined
          ) {
            response = HttpServerResponse.setHeader(response, "cache-control", "no-store")
          }
          if (!UNCOUNTED.has(route)) {
            const elapsed = Number((yield* Clock.currentTimeNanos) - started) / 1e9
            requests.inc({ route, code: String(response.status) })
            latency.observe({ route }, elapsed)
          }
          return response
        })
      return serve
    }
  }),
)

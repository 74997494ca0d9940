/**
 * W3C trace context at our edges: the span a request continues (its `traceparent`), and the `traceparent` our own
 * requests carry. `tracestate` is never touched: it travels as an end-to-end header. With tracing off nothing is
 * read or written, so a client's own trace context passes through the mesh unchanged.
 */
import * as Headers from "@effect/platform/Headers"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import { Context, Effect, FiberRef, Option, Tracer } from "effect"
import * as Spans from "../platform/Spans.js"

/** The caller's span, from a well-formed `traceparent`. */
export const parentOf = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>) => {
  const value = headers.traceparent
  return typeof value === "string"
    ? HttpTraceContext.w3c(Headers.unsafeFromRecord({ traceparent: value }))
    : Option.none<Tracer.ExternalSpan>()
}

/** Span options continuing the caller's trace, when it sent one. */
export const parentOption = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
): { readonly parent?: Tracer.ExternalSpan } => {
  const parent = parentOf(headers)
  return Option.isSome(parent) ? { parent: parent.value } : {}
}

/** The `traceparent` naming the current span, when tracing is on and there is one. */
export const current: Effect.Effect<Option.Option<string>> = Effect.withFiberRuntime((fiber) => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled)) return Effect.succeed(Option.none())
  const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
  return Effect.succeed(Option.map(span, (s) => `00-${s.traceId}-${s.spanId}-${s.sampled ? "01" : "00"}`))
})

/** `headers` with `traceparent` naming the current span (replacing the caller's), when tracing is on. */
export const inject = <H extends Record<string, unknown>>(headers: H): Effect.Effect<H> =>
  Effect.map(current, (value) => (Option.isSome(value) ? { ...headers, traceparent: value.value } : headers))

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"])

/** A request method as span names and attributes carry it: a known one, or `_OTHER` (a client picks the rest). */
export const method = (value: string): string => (METHODS.has(value) ? value : "_OTHER")

/**
 * The platform's own server span is turned off wherever we serve HTTP: it records every header (ours carry the API
 * token under a name it does not redact) and the full URL with its query; our middlewares make the span instead.
 */
export const platformSpansOff = (_request: unknown): boolean => true

/**
 * `effect` as the server span of `request`, named by method and route template (never the raw path: it can hold ids
 * and tokens) and continuing the caller's trace, with the response's status; `effect` itself while tracing is off.
 */
export const serverSpan =
  (request: HttpServerRequest.HttpServerRequest, route: string) =>
  <E, R>(
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
    Effect.flatMap(Spans.enabled, (on) => {
      if (!on) return effect
      const verb = method(request.method)
      return effect.pipe(
        Effect.tap((response) => Spans.annotate("http.response.status_code", response.status)),
        Spans.withSpan(`${verb} ${route}`, {
          kind: "server",
          captureStackTrace: false,
          attributes: { "http.request.method": verb, "http.route": route },
          ...parentOption(request.headers),
        }),
      )
    })

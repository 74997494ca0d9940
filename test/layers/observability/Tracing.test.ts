/**
 * Tracing settings from the standard OpenTelemetry environment: off unless an OTLP endpoint is set, the traces
 * endpoint winning over the base one, `service.name` from OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES, then the
 * binary's name; and what a span may leave with.
 */
import { describe, expect, it } from "@effect/vitest"
import { SpanStatusCode } from "@opentelemetry/api"
import { type ReadableSpan, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base"
import { Cause, ConfigProvider, Duration, Effect, HashMap, Logger, Option } from "effect"
import { BadGateway } from "../../../src/domain/Errors.js"
import * as Logging from "../../../src/layers/Logging.js"
import { redact, statementKind } from "../../../src/layers/observability/Redaction.js"
import * as Tracing from "../../../src/layers/observability/Tracing.js"

const settings = (env: Record<string, string>) =>
  Tracing.settingsFromConfig("mesh-node").pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
  )

describe("Tracing settings", () => {
  it.effect("off without an endpoint, or when the SDK is disabled", () =>
    Effect.gen(function* () {
      expect(Option.isNone(yield* settings({}))).toBe(true)
      expect(Option.isNone(yield* settings({ OTEL_SERVICE_NAME: "x", OTEL_RESOURCE_ATTRIBUTES: "a=b" }))).toBe(true)
      const disabled = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }
      expect(Option.isNone(yield* settings(disabled))).toBe(true)
      const none = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }
      expect(Option.isNone(yield* settings(none))).toBe(true)
    }),
  )

  it.effect("the base endpoint gets /v1/traces; the traces endpoint is taken as it is and wins", () =>
    Effect.gen(function* () {
      const base = yield* settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })
      expect(Option.map(base, (s) => s.endpoint)).toEqual(Option.some("http://collector:4318/v1/traces"))
      const both = yield* settings({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:9999/custom",
      })
      expect(Option.map(both, (s) => s.endpoint)).toEqual(Option.some("http://traces:9999/custom"))
    }),
  )

  it.effect("service.name: OTEL_SERVICE_NAME, else the resource attributes, else the binary's name", () =>
    Effect.gen(function* () {
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }
      const plain = Option.getOrThrow(yield* settings(endpoint))
      expect(plain.serviceName).toBe("mesh-node")
      expect(plain.scheduleDelay).toEqual(Duration.millis(5000))
      const attributes = Option.getOrThrow(
        yield* settings({
          ...endpoint,
          OTEL_RESOURCE_ATTRIBUTES: "service.name=edge,deployment.environment=prod,team=a%2Cb,broken",
        }),
      )
      expect(attributes.serviceName).toBe("edge")
      expect(attributes.attributes).toEqual({ "deployment.environment": "prod", team: "a,b" })
      const named = Option.getOrThrow(
        yield* settings({ ...endpoint, OTEL_SERVICE_NAME: "node-7", OTEL_RESOURCE_ATTRIBUTES: "service.name=edge" }),
      )
      expect(named.serviceName).toBe("node-7")
    }),
  )
})

describe("Redaction", () => {
  it("a SQL span keeps its statement's kind, never its text", () => {
    const out = redact({
      "db.system.name": "sqlite",
      "db.operation.name": "execute",
      "db.query.text": "UPDATE nodes SET labels = 'secret' WHERE peer_id = ?",
    })
    expect(out).toEqual({ "db.system.name": "sqlite", "db.operation.name": "UPDATE" })
    expect(statementKind("  -- why\n/* note */ select 1")).toBe("SELECT")
    expect(statementKind("")).toBe("UNKNOWN")
  })

  it("headers, full URLs, queries and stack traces are dropped", () => {
    const out = redact({
      "http.request.header.authorization": "Bearer secret",
      "http.response.header.set-cookie": "a=b",
      "url.full": "http://host/path?token=secret",
      "url.query": "token=secret",
      "code.stacktrace": "at /home/x/file.ts:1",
      "http.route": "/v1/models",
    })
    expect(out).toEqual({ "http.route": "/v1/models" })
  })
})

describe("Redaction of a failing span", () => {
  // Issue 29, item 9: a failing `mesh.proxy` span exported `exception.stacktrace` (local paths) and the error message.
  it.effect("exports its status code and error type, never the message, the stack trace or a logged cause", () =>
    Effect.gen(function* () {
      const exported: Array<ReadableSpan> = []
      const exporter: SpanExporter = {
        export: (spans, done) => {
          exported.push(...spans)
          done({ code: 0 }) // ExportResultCode.SUCCESS
        },
        shutdown: () => Promise.resolve(),
      }
      const secret = "peer 12D3x did not answer: connect ECONNREFUSED /home/someone/secret.sock"
      const failing = Effect.gen(function* () {
        yield* Effect.logWarning("attempt failed", Cause.fail(new Error(secret)))
        return yield* new BadGateway({ message: secret })
      }).pipe(Effect.withSpan("mesh.proxy"), Effect.flip)
      const error = yield* failing.pipe(
        Effect.provide(Tracing.withProcessor(new SimpleSpanProcessor(exporter), { serviceName: "t", attributes: {} })),
        Effect.provide(Logger.remove(Logger.defaultLogger)),
      )
      expect(error.message).toBe(secret)
      expect(exported.map((span) => span.name)).toEqual(["mesh.proxy"])
      const span = exported[0] as ReadableSpan
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR })
      const exception = span.events.find((event) => event.name === "exception")
      expect(exception?.attributes).toEqual({ "exception.type": "BadGateway" })
      const logged = span.events.find((event) => event.name === "attempt failed")
      expect(logged?.attributes?.["effect.logLevel"]).toBe("WARN")
      expect(JSON.stringify({ events: span.events, status: span.status, attributes: span.attributes })).not.toMatch(
        /secret|ECONNREFUSED|stacktrace|effect\.cause/,
      )
    }),
  )
})

describe("Logging", () => {
  it.effect("a line logged inside a span carries its trace and span ids while tracing is on, none when off", () =>
    Effect.gen(function* () {
      const lines: Array<Record<string, unknown>> = []
      const capture = Logging.withTraceIds(
        Logger.make(({ annotations }) => {
          lines.push(Object.fromEntries(HashMap.toEntries(annotations)))
        }),
      )
      const program = Effect.gen(function* () {
        yield* Effect.logInfo("inside")
        return yield* Effect.currentSpan
      }).pipe(Effect.withSpan("work"), Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
      const span = yield* program.pipe(Effect.withTracerEnabled(true))
      yield* program.pipe(Effect.withTracerEnabled(false))
      expect(lines[0]).toEqual({ trace_id: span.traceId, span_id: span.spanId })
      expect(lines[1]).toEqual({})
    }),
  )
})

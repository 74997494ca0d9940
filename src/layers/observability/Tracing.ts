/**
 * OpenTelemetry tracing for every mesh process. Off unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`): off,
 * Effect's tracer is disabled and our hot-path spans are skipped (`src/platform/Spans.ts`). On, spans go to the
 * endpoint as OTLP over HTTP (JSON) in batches, from a provider of this layer's own (never the global one), with
 * `service.name` from `OTEL_SERVICE_NAME`, else `OTEL_RESOURCE_ATTRIBUTES`, else the binary's name. Every span passes
 * `Redaction` on its way out. The OpenTelemetry packages are loaded only when tracing is on (`OtelTracing`).
 */
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Duration, Effect, Layer, Option } from "effect"
import * as Lazy from "../../platform/Lazy.js"
import type { TracingSettings } from "./OtelTracing.js"

export type { TracingSettings } from "./OtelTracing.js"

/** Tracing off: Effect's tracer disabled, so spans are no-ops. */
export const off: Layer.Layer<never> = Layer.setTracerEnabled(false)

/** `k=v,k2=v2`, values percent-encoded (the OpenTelemetry environment format); malformed pairs are skipped. */
export const parseAttributes = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=")
    if (eq <= 0) continue
    const key = pair.slice(0, eq).trim()
    try {
      out[key] = decodeURIComponent(pair.slice(eq + 1).trim())
    } catch {}
  }
  return out
}

/** Spans exported from a provider of this layer's own, made when the layer is built; flushed when its scope closes. */
export const layer = (settings: TracingSettings): Layer.Layer<never> =>
  Lazy.layer(
    () => import("./OtelTracing.js"),
    (otel) => otel.layer(settings),
  )

/** Spans handed to `inner` through `Redaction`, from a provider of this layer's own (tests pass an exporter of theirs). */
export const withProcessor = (
  inner: SpanProcessor,
  settings: Pick<TracingSettings, "serviceName" | "attributes">,
): Layer.Layer<never> =>
  Lazy.layer(
    () => import("./OtelTracing.js"),
    (otel) => otel.withProcessor(inner, settings),
  )

/** The settings from the standard environment, or none when tracing is off. */
export const settingsFromConfig = (defaultServiceName: string) =>
  Effect.gen(function* () {
    const disabled =
      (yield* Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))) ||
      (yield* Config.string("OTEL_TRACES_EXPORTER").pipe(Config.withDefault("otlp"))).trim().toLowerCase() === "none"
    const traces = yield* Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    const base = yield* Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT"))
    const endpoint = Option.orElse(traces, () => Option.map(base, (url) => `${url.replace(/\/+$/, "")}/v1/traces`))
    if (disabled || Option.isNone(endpoint)) return Option.none<TracingSettings>()
    const attributes = parseAttributes(yield* Config.string("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault("")))
    const named = yield* Config.option(Config.nonEmptyString("OTEL_SERVICE_NAME"))
    const serviceName = Option.getOrElse(named, () => attributes["service.name"] ?? defaultServiceName)
    const { "service.name": _, ...rest } = attributes
    const delay = yield* Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000))
    return Option.some<TracingSettings>({
      endpoint: endpoint.value,
      serviceName,
      attributes: rest,
      scheduleDelay: Duration.millis(delay),
    })
  })

/** Tracing as the environment asks, for the binary `defaultServiceName`. */
export const fromConfig = (defaultServiceName: string): Layer.Layer<never> =>
  Layer.unwrapEffect(
    settingsFromConfig(defaultServiceName).pipe(
      Effect.map(Option.match({ onNone: () => off, onSome: layer })),
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning(`tracing stays off: ${error.message.split("\n")[0]}`), off),
      ),
    ),
  )

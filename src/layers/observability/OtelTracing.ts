/**
 * The OpenTelemetry side of `Tracing`: a provider of its own with the OTLP exporter. Kept apart and loaded by
 * `Tracing` only when tracing is on, because the OpenTelemetry packages weigh more than any other part of an idle
 * member that does not trace (docs/scale.md, "Idle weight").
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelResource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Duration, Effect, Layer } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import { RedactingProcessor } from "./Redaction.js"

/** What tracing is on with (from `Tracing.settingsFromConfig`). */
export interface TracingSettings {
  /** Where spans are posted: the traces URL itself (`.../v1/traces`). */
  readonly endpoint: string
  readonly serviceName: string
  /** Resource attributes besides `service.name` (from `OTEL_RESOURCE_ATTRIBUTES`). */
  readonly attributes: Readonly<Record<string, string>>
  /** How long spans wait in the batch before they are sent. */
  readonly scheduleDelay: Duration.Duration
}

/** Spans posted to `settings.endpoint` in batches. */
export const layer = (settings: TracingSettings): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.sync(() =>
      withProcessor(
        new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.endpoint }), {
          scheduledDelayMillis: Math.max(1, Duration.toMillis(settings.scheduleDelay)),
        }),
        settings,
      ),
    ),
  )

/** Spans handed to `inner` through `Redaction`, from a provider of this layer's own. */
export const withProcessor = (
  inner: SpanProcessor,
  settings: Pick<TracingSettings, "serviceName" | "attributes">,
): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      const processor = new RedactingProcessor(inner)
      const resource = OtelResource.layer({
        serviceName: settings.serviceName,
        serviceVersion: pkg.version,
        attributes: settings.attributes,
      })
      return Layer.mergeAll(OtelTracer.layerWithoutOtelTracer, Layer.setTracerEnabled(true)).pipe(
        Layer.provide(OtelTracer.layerTracer),
        Layer.provide(NodeSdk.layerTracerProvider(processor, { shutdownTimeout: Duration.seconds(3) })),
        Layer.provide(resource),
      )
    }),
  )

/**
 * Log output for every mesh process: level from --log-level, JSON lines when LOG_FORMAT=json, logfmt otherwise.
 * Logs go to stderr so that stdout carries only what a command prints as its result; with tracing on, lines carry
 * the trace and span ids.
 */
import {
  Config,
  Context,
  Effect,
  FiberRef,
  FiberRefs,
  HashMap,
  Layer,
  Logger,
  type LogLevel,
  Option,
  Tracer,
} from "effect"

export type LogFormat = "text" | "json"

export const layer = (level: LogLevel.LogLevel, format: LogFormat): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      Logger.withConsoleError(withTraceIds(format === "json" ? Logger.jsonLogger : Logger.logfmtLogger)),
    ),
    Logger.minimumLogLevel(level),
  )

/**
 * Lines logged inside a span carry its `trace_id` and `span_id` while tracing is on, so a log line leads to its
 * trace. Off, spans are no-ops and their ids mean nothing: nothing is added.
 */
export const withTraceIds = <O>(logger: Logger.Logger<unknown, O>): Logger.Logger<unknown, O> =>
  Logger.mapInputOptions(logger, (options) => {
    if (!FiberRefs.getOrDefault(options.context, FiberRef.currentTracerEnabled)) return options
    const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
    if (Option.isNone(span)) return options
    return {
      ...options,
      annotations: HashMap.set(
        HashMap.set(options.annotations, "trace_id", span.value.traceId),
        "span_id",
        span.value.spanId,
      ),
    }
  })

/** LOG_FORMAT from the environment: `json` or anything else for text. */
export const formatFromConfig: Effect.Effect<LogFormat> = Config.string("LOG_FORMAT").pipe(
  Config.withDefault("text"),
  Effect.map((value): LogFormat => (value.trim().toLowerCase() === "json" ? "json" : "text")),
  Effect.orElseSucceed((): LogFormat => "text"),
)

export const layerFromConfig = (level: LogLevel.LogLevel): Layer.Layer<never> =>
  Layer.unwrapEffect(Effect.map(formatFromConfig, (format) => layer(level, format)))

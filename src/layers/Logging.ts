/**
 * Log output for every mesh process: level from --log-level, JSON lines when LOG_FORMAT=json, logfmt otherwise.
 * Logs go to stderr so that stdout carries only what a command prints as its result; with tracing on, lines carry
 * the trace and span ids.
 */
import {
  Cause,
  Config,
  Context,
  Effect,
  FiberRef,
  FiberRefs,
  HashMap,
  Layer,
  Logger,
  LogLevel,
  Option,
  Tracer,
} from "effect"

export type LogFormat = "text" | "json"

export const layer = (level: LogLevel.LogLevel, format: LogFormat): Layer.Layer<never> => {
  const base = withTraceIds(format === "json" ? Logger.jsonLogger : Logger.logfmtLogger)
  return Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      Logger.withConsoleError(LogLevel.lessThanEqual(level, LogLevel.Debug) ? base : withoutStacks(base)),
    ),
    Logger.minimumLogLevel(level),
  )
}

/**
 * A line that carries a failure says what failed in one `error` field, not with a JavaScript stack: warnings such
 * as "joining the mesh failed; retrying" are read by operators, and a stack buries the reason. `--log-level debug`
 * keeps the whole cause, stacks included, for whoever debugs the program.
 */
export const withoutStacks = <O>(logger: Logger.Logger<unknown, O>): Logger.Logger<unknown, O> =>
  Logger.mapInputOptions(logger, (options) =>
    Cause.isEmpty(options.cause)
      ? options
      : {
          ...options,
          cause: Cause.empty,
          annotations: HashMap.set(options.annotations, "error", summary(options.cause)),
        },
  )

/** The first failure of a cause in one line: its message, or "interrupted". */
export const summary = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted"
  const error = Cause.squash(cause)
  const message = (error as { message?: unknown } | undefined)?.message
  const text = typeof message === "string" ? message : String(error)
  return (text.split("\n")[0] ?? "").slice(0, 500)
}

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

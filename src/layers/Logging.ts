/**
 * Log output for every mesh process: level from --log-level, JSON lines when LOG_FORMAT=json, logfmt otherwise.
 * Logs go to stderr so that stdout carries only what a command prints as its result.
 */
import { Config, Effect, Layer, Logger, type LogLevel } from "effect"

export type LogFormat = "text" | "json"

export const layer = (level: LogLevel.LogLevel, format: LogFormat): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      Logger.withConsoleError(format === "json" ? Logger.jsonLogger : Logger.logfmtLogger),
    ),
    Logger.minimumLogLevel(level),
  )

/** LOG_FORMAT from the environment: `json` or anything else for text. */
export const formatFromConfig: Effect.Effect<LogFormat> = Config.string("LOG_FORMAT").pipe(
  Config.withDefault("text"),
  Effect.map((value): LogFormat => (value.trim().toLowerCase() === "json" ? "json" : "text")),
  Effect.orElseSucceed((): LogFormat => "text"),
)

export const layerFromConfig = (level: LogLevel.LogLevel): Layer.Layer<never> =>
  Layer.unwrapEffect(Effect.map(formatFromConfig, (format) => layer(level, format)))

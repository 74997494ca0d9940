/**
 * A logger that keeps the node's newest log lines (logfmt, redacted) in memory for `GET /debug/logs`, beside the
 * process's normal log output.
 */
import { Effect, Layer, Logger, MutableList } from "effect"
import { LogRing } from "../../services/node/LogRing.js"

const CAPACITY = 500

/**
 * Removes anything shaped like a secret. Secrets are never logged on purpose (they are Redacted); this is the second
 * line of defence for text that came from elsewhere (a library's error message quoting a header, say).
 */
export const redact = (line: string): string =>
  line
    .replace(/\b(Bearer|Basic)\s+[^\s"',]+/gi, "$1 <redacted>")
    .replace(/\bmesh-(api|bt)-[0-9a-f]{8,}\b/g, "mesh-$1-<redacted>")
    .replace(/[A-Za-z0-9+/_-]{120,}={0,2}/g, "<redacted>")

export const layer = Layer.unwrapEffect(
  Effect.sync(() => {
    const lines = MutableList.empty<string>()
    const keep = Logger.logfmtLogger.pipe(
      Logger.map((line) => {
        MutableList.append(lines, redact(line))
        if (MutableList.length(lines) > CAPACITY) MutableList.shift(lines)
      }),
    )
    const ring = LogRing.of({
      recent: (limit) =>
        Effect.sync(() => {
          const all = Array.from(lines)
          return all.slice(Math.max(0, all.length - limit))
        }),
    })
    return Layer.merge(Layer.succeed(LogRing, ring), Logger.add(keep))
  }),
)

/**
 * The last check on every span before export. SQL spans keep the statement's kind (`SELECT`, `INSERT`...) and lose
 * its text; header, full-URL, query and stack-trace attributes are dropped wherever a library recorded them (a
 * stack trace names the machine's paths). Our own spans never set these; this guards what libraries add by default.
 */
import type { Context } from "@opentelemetry/api"
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"

const QUERY_TEXT = "db.query.text"
const DROPPED = new Set(["url.full", "url.query", "db.statement", "code.stacktrace"])
const DROPPED_PREFIXES = ["http.request.header.", "http.response.header."]

/** The first keyword of a statement, upper-cased: what it does, never what it carries. */
export const statementKind = (sql: string): string => {
  const match = /^\s*(?:--[^\n]*\n\s*|\/\*[\s\S]*?\*\/\s*)*([A-Za-z]+)/.exec(sql)
  return match?.[1]?.toUpperCase() ?? "UNKNOWN"
}

/** The attributes a span may leave with. */
export const redact = (attributes: ReadableSpan["attributes"]): ReadableSpan["attributes"] => {
  const out: Record<string, ReadableSpan["attributes"][string]> = {}
  for (const [key, value] of Object.entries(attributes)) {
    if (DROPPED.has(key) || DROPPED_PREFIXES.some((prefix) => key.startsWith(prefix))) continue
    if (key === QUERY_TEXT) {
      out["db.operation.name"] = statementKind(String(value))
      continue
    }
    if (key === "db.operation.name" && QUERY_TEXT in attributes) continue
    out[key] = value
  }
  return out
}

export class RedactingProcessor implements SpanProcessor {
  constructor(private readonly inner: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext)
  }

  onEnd(span: ReadableSpan): void {
    // A view of the span with its attributes replaced; everything else (context, times, events) is the span's own.
    const view = Object.create(span, { attributes: { value: redact(span.attributes), enumerable: true } })
    this.inner.onEnd(view as ReadableSpan)
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush()
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown()
  }
}

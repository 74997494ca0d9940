/**
 * The last check on every span before export. SQL spans keep the statement's kind (`SELECT`, `INSERT`...) and lose
 * its text; header, full-URL, query and stack-trace attributes are dropped wherever a library recorded them (a
 * stack trace names the machine's paths). Our own spans never set these; this guards what libraries add by default.
 * A failing span keeps its status code and, in its exception event, the error's type: Effect's tracer records the
 * error's message as the status message and in the event with its stack trace, and a message carries whatever the
 * failure held (a peer's answer, a path, a backend's address).
 */
import type { Context } from "@opentelemetry/api"
import type { ReadableSpan, Span, SpanProcessor, TimedEvent } from "@opentelemetry/sdk-trace-base"

const QUERY_TEXT = "db.query.text"
const DROPPED = new Set([
  "url.full",
  "url.query",
  "db.statement",
  "code.stacktrace",
  "exception.message",
  "exception.stacktrace",
  // Effect's tracer logger: a log line's cause, stack traces included, on the event the line becomes.
  "effect.cause",
])
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

/** The events a span may leave with: the same attribute rule as the span's own. */
export const redactEvents = (events: ReadableSpan["events"]): ReadableSpan["events"] =>
  events.map((event): TimedEvent => ({ ...event, attributes: redact(event.attributes ?? {}) }))

/** A span's status without its message: the code alone says it failed. */
export const redactStatus = (status: ReadableSpan["status"]): ReadableSpan["status"] => ({ code: status.code })

export class RedactingProcessor implements SpanProcessor {
  constructor(private readonly inner: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext)
  }

  onEnd(span: ReadableSpan): void {
    // A view of the span with its attributes, events and status replaced; everything else is the span's own.
    const view = Object.create(span, {
      attributes: { value: redact(span.attributes), enumerable: true },
      events: { value: redactEvents(span.events), enumerable: true },
      status: { value: redactStatus(span.status), enumerable: true },
    })
    this.inner.onEnd(view as ReadableSpan)
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush()
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown()
  }
}

/**
 * A real OTLP/HTTP trace receiver on loopback, for tests: it takes the JSON encoding at `/v1/traces` (what
 * @opentelemetry/exporter-trace-otlp-http sends) and keeps every span, flattened with its resource, and every raw
 * body, so a test can look for a value anywhere in what was exported.
 */
import { createServer } from "node:http"
import { Effect } from "effect"

/** One exported span, flattened with its service name and resource. */
export interface Exported {
  readonly service: string
  readonly resource: Readonly<Record<string, unknown>>
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly attributes: Readonly<Record<string, unknown>>
}

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly boolValue?: boolean
  readonly doubleValue?: number
}
interface OtlpAttribute {
  readonly key: string
  readonly value: OtlpValue
}
interface OtlpExport {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<OtlpAttribute> }
    readonly scopeSpans?: ReadonlyArray<{
      readonly spans?: ReadonlyArray<{
        readonly traceId: string
        readonly spanId: string
        readonly parentSpanId?: string
        readonly name: string
        readonly attributes?: ReadonlyArray<OtlpAttribute>
      }>
    }>
  }>
}

const attributeValue = (v: OtlpValue): unknown => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue

export interface Receiver {
  /** The traces URL (`http://127.0.0.1:<port>/v1/traces`). */
  readonly url: string
  readonly spans: Array<Exported>
  readonly bodies: Array<string>
  close(): void
}

/** Listens for the life of the scope. */
export const receiver = Effect.acquireRelease(
  Effect.async<Receiver>((resume) => {
    const spans: Array<Exported> = []
    const bodies: Array<string> = []
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        if (req.method !== "POST" || req.url !== "/v1/traces" || !req.headers["content-type"]?.includes("json")) {
          res.writeHead(415).end()
          return
        }
        bodies.push(body)
        const parsed = JSON.parse(body) as OtlpExport
        for (const rs of parsed.resourceSpans ?? []) {
          const resource = Object.fromEntries(
            (rs.resource?.attributes ?? []).map((a) => [a.key, attributeValue(a.value)]),
          )
          const service = typeof resource["service.name"] === "string" ? resource["service.name"] : "?"
          for (const ss of rs.scopeSpans ?? []) {
            for (const span of ss.spans ?? []) {
              spans.push({
                service,
                resource,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? "",
                name: span.name,
                attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, attributeValue(a.value)])),
              })
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${port}/v1/traces`,
          spans,
          bodies,
          close: () => {
            server.closeAllConnections()
            server.close()
          },
        }),
      )
    })
  }),
  (r) => Effect.sync(() => r.close()),
)

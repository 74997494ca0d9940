/**
 * A provider's answer on its way to the local client: headers at once (an event stream's first chunk may be long in
 * coming), body chunks written as they arrive, nothing buffered. On the side it keeps what it needs to read the
 * answer's `usage`: a whole JSON answer up to 1 MiB, or the last 16 KiB of an event stream (where the usage chunk
 * comes last). Reading happens once, when the answer has ended.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Effect } from "effect"
import * as Forwarding from "../../domain/Forwarding.js"
import * as Inference from "../../domain/Inference.js"
import { headersUnlessBodyFollows, relayBody } from "../proxy/Relay.js"

const MAX_JSON_BYTES = 1024 * 1024
const EVENTS_TAIL_BYTES = 16 * 1024

type Kind = "json" | "events" | "other"

/** What part of an answer is kept to read its usage. */
export class UsageTap {
  private kind: Kind
  private readonly chunks: Array<Buffer> = []
  private size = 0

  constructor(headers: IncomingMessage["headers"]) {
    const type = String(headers["content-type"] ?? "").toLowerCase()
    this.kind =
      headers["content-encoding"] !== undefined && headers["content-encoding"] !== "identity"
        ? "other"
        : type.includes("text/event-stream")
          ? "events"
          : type.includes("json")
            ? "json"
            : "other"
  }

  readonly push = (chunk: Buffer): void => {
    if (this.kind === "other") return
    this.chunks.push(chunk)
    this.size += chunk.byteLength
    if (this.kind === "json") {
      if (this.size > MAX_JSON_BYTES) {
        this.kind = "other"
        this.chunks.length = 0
      }
      return
    }
    while (this.chunks.length > 1 && this.size - (this.chunks[0]?.byteLength ?? 0) >= EVENTS_TAIL_BYTES) {
      this.size -= this.chunks.shift()?.byteLength ?? 0
    }
  }

  usage(): Inference.Usage | undefined {
    if (this.kind === "other" || this.chunks.length === 0) return undefined
    const text = Buffer.concat(this.chunks, this.size).toString("utf8")
    return this.kind === "json" ? Inference.usageOfJson(text) : Inference.usageOfEvents(text)
  }
}

/**
 * Writes `upstream` to `res` with the extra headers, tapping its chunks; completes when `res` has closed. A client
 * that goes away stops the answer here; ending the provider's request is the owner's part (closing its scope).
 */
export const deliver = (
  upstream: IncomingMessage,
  res: ServerResponse,
  extra: Readonly<Record<string, string>>,
  tap: UsageTap,
): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const headers = Forwarding.response(upstream.headers)
    for (const [name, value] of Object.entries(extra)) headers[name] = value
    res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, headers)
    headersUnlessBodyFollows(upstream, res)
    upstream.on("data", tap.push)
    relayBody(upstream, res)
    const closed = () => {
      if (!upstream.complete) upstream.destroy()
      resume(Effect.void)
    }
    if (res.closed) closed()
    else res.once("close", closed)
    return Effect.sync(() => res.off("close", closed))
  })

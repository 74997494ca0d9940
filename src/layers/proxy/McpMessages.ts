/**
 * The JSON-RPC a caller holding a grant of single tools sends to an MCP service, and what comes back (McpGrant's
 * rules applied on the serving side of the proxy). A request body is read whole (up to MAX_MESSAGE_BYTES), checked
 * message by message and passed on as the JSON that was checked, never as the bytes that came; answers, JSON or
 * server-sent events, have their tool lists cut to the granted tools.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { StringDecoder } from "node:string_decoder"
import { Effect } from "effect"
import { type ApiError, BadGateway, BadRequest, PayloadTooLarge, UnsupportedMediaType } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as McpGrant from "../../domain/McpGrant.js"
import * as McpHeaders from "../../domain/McpHeaders.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as Body from "../inference/Body.js"

/**
 * Largest MCP body the proxy reads from a peer or a backend to check it, and the largest JSON-RPC message read from a
 * stdio server (McpProcess: a longer line ends the process as broken).
 */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024

/** A request body that may go on, parsed and as the bytes to send; or the answer that refuses it. */
export type Checked =
  | { readonly _tag: "Forward"; readonly message: unknown; readonly bytes: Buffer }
  | { readonly _tag: "Denied"; readonly answer: unknown }

const encoded = (req: IncomingMessage) => {
  const coding = req.headers["content-encoding"]
  return coding !== undefined && coding.trim().toLowerCase() !== "identity"
}

/** A grant a body is checked against, how its refusals read, and the rule its JSON-RPC errors name. */
export interface Check {
  readonly grant: McpGrant.Grant
  readonly wording?: McpGrant.Wording
  readonly rule?: string
}

/** A POST body read whole and parsed: the JSON, and the bytes to send on (the JSON re-serialised, never what came). */
export interface Read {
  readonly message: unknown
  readonly bytes: Buffer
}

/** Reads an MCP POST body whole (up to MAX_MESSAGE_BYTES, unencoded) and parses it. */
export const read = (req: IncomingMessage): Effect.Effect<Read, ApiError> =>
  Effect.gen(function* () {
    if (encoded(req)) return yield* new UnsupportedMediaType({ message: "an MCP request body must not be encoded" })
    const body = yield* Body.read(req, MAX_MESSAGE_BYTES).pipe(
      Effect.catchTags({
        TooLarge: () =>
          new PayloadTooLarge({ message: `an MCP request body must be under ${MAX_MESSAGE_BYTES} bytes` }),
        CutOff: () => new BadRequest({ message: "the request body was cut off" }),
      }),
    )
    const message = yield* Effect.try({
      try: () => JSON.parse(body.toString("utf8")) as unknown,
      catch: () => new BadRequest({ message: "the request body is not JSON" }),
    })
    return { message, bytes: Buffer.from(JSON.stringify(message)) }
  })

/**
 * Reads a POST body and checks every message in it against each grant (the policy's, and an agent's scope). A batch
 * with one refused request is refused whole.
 */
export const check = (
  req: IncomingMessage,
  grant: McpGrant.Grant,
  service: string,
  more: ReadonlyArray<Check> = [],
): Effect.Effect<Checked, ApiError> => Effect.map(read(req), (body) => checkRead(body, grant, service, more))

/** As `check`, for a body already read. */
export const checkRead = (
  { message, bytes }: Read,
  grant: McpGrant.Grant,
  service: string,
  more: ReadonlyArray<Check> = [],
): Checked => {
  const messages: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
  // The narrower grants first, so a refusal names who refused; `grant` holds what all of them let through.
  const checks: ReadonlyArray<Check> = [...more, { grant }]
  const refusals = messages.map((m) => {
    for (const c of checks) {
      const reason = McpGrant.refusal(c.grant, service, m, c.wording)
      if (reason !== undefined) return { reason, rule: c.rule }
    }
    return undefined
  })
  if (refusals.every((r) => r === undefined)) return { _tag: "Forward", message, bytes }
  const answers = messages.flatMap((m, i) => {
    const id = McpGrant.requestId(m)
    if (id === undefined) return []
    const refused = refusals[i]
    return [
      McpGrant.deniedAnswer(
        id,
        refused?.reason ?? "not sent: another message of this batch was refused",
        refused?.rule ?? "allowed_services",
      ),
    ]
  })
  return { _tag: "Denied", answer: Array.isArray(message) ? answers : answers[0] }
}

/** The rule a refusal's first JSON-RPC error names (`allowed_services`, `scope.tools`), for the call log. */
export const ruleOf = (answer: unknown): string => {
  const first = (Array.isArray(answer) ? answer[0] : answer) as { error?: { data?: { rule?: unknown } } } | undefined
  const rule = first?.error?.data?.rule
  return typeof rule === "string" ? rule : "allowed_services"
}

/** Answers a refused body with its JSON-RPC errors. */
export const writeDenied = (res: ServerResponse, answer: unknown): void => {
  const text = JSON.stringify(answer)
  res.writeHead(200, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
  })
  res.end(text)
}

/** Answers a body whose Mcp-* headers disagree with it: 400 with JSON-RPC -32020, before it reaches the backend. */
export const writeMismatch = (res: ServerResponse, body: unknown, reason: string): void => {
  const text = JSON.stringify(McpHeaders.mismatchAnswer(body, reason))
  res.writeHead(400, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
  })
  res.end(text)
}

/** One message or a batch from the server, with tool lists cut to the grant; undefined when nothing changes. */
const filtered = (grant: McpGrant.Grant, text: string): string | undefined => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  const messages: ReadonlyArray<unknown> = Array.isArray(value) ? value : [value]
  const out = messages.map((m) => McpGrant.filterAnswer(grant, m))
  if (out.every((m) => m === undefined)) return undefined
  const merged = messages.map((m, i) => out[i] ?? m)
  return JSON.stringify(Array.isArray(value) ? merged : merged[0])
}

/** One event of a stream (its lines, without the blank line ending it) with its data filtered. */
const filterEvent = (grant: McpGrant.Grant, lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(l.startsWith("data: ") ? 6 : 5))
  if (data.length === 0) return lines
  const replaced = filtered(grant, data.join("\n"))
  if (replaced === undefined) return lines
  return [...lines.filter((l) => !l.startsWith("data:")), `data: ${replaced}`]
}

/**
 * Relays the backend's answer with tool lists cut to the grant. A JSON answer is read whole; an event stream is
 * passed on event by event, as each ends. Either past MAX_MESSAGE_BYTES cuts the answer off.
 */
export const relayFiltered = (upstream: IncomingMessage, res: ServerResponse, grant: McpGrant.Grant): void => {
  const headers = Forwarding.response(upstream.headers)
  const type = String(upstream.headers["content-type"] ?? "").toLowerCase()
  const status = upstream.statusCode ?? 502
  const cut = () => {
    upstream.destroy()
    if (res.headersSent) return void res.destroy(new Error("an MCP answer outgrew the limit"))
    const { status, body } = ErrorResponse.parts(
      new BadGateway({ message: `the MCP answer was refused: encoded, or over ${MAX_MESSAGE_BYTES} bytes` }),
    )
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
    res.end(JSON.stringify(body))
  }
  res.once("close", () => {
    if (!upstream.complete) upstream.destroy()
  })
  if (upstream.headers["content-encoding"] !== undefined) {
    cut()
    return
  }
  if (type.startsWith("text/event-stream")) {
    delete headers["content-length"]
    res.writeHead(status, upstream.statusMessage, headers)
    res.flushHeaders()
    const decoder = new StringDecoder("utf8")
    let pending = ""
    const flush = (final: boolean) => {
      // A lone CR at the end may be the first half of a CRLF: it waits for the next chunk.
      const hold = !final && pending.endsWith("\r")
      const events = (hold ? pending.slice(0, -1) : pending).replace(/\r\n?/g, "\n").split("\n\n")
      pending = (final ? "" : (events.pop() ?? "")) + (hold ? "\r" : "")
      const out = events
        .filter((e) => e.length > 0)
        .map((e) => `${filterEvent(grant, e.split("\n")).join("\n")}\n\n`)
        .join("")
      if (out.length > 0 && !res.write(out)) {
        upstream.pause()
        res.once("drain", () => upstream.resume())
      }
    }
    upstream.on("data", (chunk: Buffer) => {
      pending += decoder.write(chunk)
      if (pending.length > MAX_MESSAGE_BYTES) {
        cut()
        return
      }
      flush(false)
    })
    upstream.once("end", () => {
      pending += decoder.end()
      flush(true)
      res.end()
    })
    upstream.once("close", () => {
      if (!upstream.complete) res.destroy(new Error("the answer was cut off"))
    })
    return
  }
  if (!type.startsWith("application/json")) {
    res.writeHead(status, upstream.statusMessage, headers)
    upstream.pipe(res)
    return
  }
  const chunks: Array<Buffer> = []
  let size = 0
  upstream.on("data", (chunk: Buffer) => {
    size += chunk.byteLength
    if (size > MAX_MESSAGE_BYTES) {
      cut()
      return
    }
    chunks.push(chunk)
  })
  upstream.once("end", () => {
    const body = Buffer.concat(chunks, size)
    const replaced = filtered(grant, body.toString("utf8"))
    const out = replaced === undefined ? body : Buffer.from(replaced)
    headers["content-length"] = String(out.byteLength)
    res.writeHead(status, upstream.statusMessage, headers)
    res.end(out)
  })
  upstream.once("close", () => {
    if (!upstream.complete) res.destroy(new Error("the answer was cut off"))
  })
}

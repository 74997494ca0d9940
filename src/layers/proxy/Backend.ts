/**
 * The last hop of the proxy: an allowed request from a peer, sent to the service's `target_url` over keep-alive
 * connections, its response streamed back unbuffered. When the peer goes away (its stream reset or closed) the
 * backend request is destroyed at once. An A2A agent card is the one answer read whole, to point its interface URLs
 * at the caller's proxy path.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { Duration, Effect, Option, type Scope } from "effect"
import * as AgentCard from "../../domain/AgentCard.js"
import { BackendUnreachable, BadGateway } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import type * as McpGrant from "../../domain/McpGrant.js"
import type { ServiceSpec } from "../../domain/NodeFile.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as TraceContext from "../../http/TraceContext.js"
import type * as Deadlines from "../../platform/Deadlines.js"
import * as Spans from "../../platform/Spans.js"
import { relayFiltered } from "./McpMessages.js"
import { hasBody, relayBody, relayResponse } from "./Relay.js"

export interface Target {
  readonly service: ServiceSpec
  readonly targetUrl: string
  readonly backend: Forwarding.Target
  /** Raw path below the service and raw query (without `?`). */
  readonly path: string
  readonly query: string
  readonly caller: Forwarding.Caller
  /**
   * An MCP request whose body was read here: its checked body (POST), sent in place of the one that came, and the
   * grant its answers are cut to (a grant of single tools; a whole-service grant cuts nothing).
   */
  readonly mcp?: { readonly grant: McpGrant.Grant; readonly body?: Buffer }
  /** Told of the backend's answer as its headers arrive (the MCP session binding reads them). */
  readonly onResponse?: (upstream: IncomingMessage) => void
}

/** A whole answer of the backend to one of the node's own requests. */
export interface Answer {
  readonly status: number
  readonly headers: IncomingMessage["headers"]
  readonly body: Buffer
}

/**
 * A small request of the node's own to the backend, as the caller's request would go (its headers, the caller's
 * identity), with `extra` headers and `body`: the answer read whole, up to `maxBytes`, within `timeout`; why not,
 * as text, otherwise.
 */
export type Exchange = (
  target: Target,
  callerHeaders: Forwarding.Headers,
  extra: Readonly<Record<string, string>>,
  body: Buffer,
  limits: { readonly maxBytes: number; readonly timeout: Duration.Duration },
) => Effect.Effect<Answer, string>

const describe = (error: Error): string => {
  const code = (error as { code?: unknown }).code
  return typeof code === "string" ? code : error.message.slice(0, 200)
}

/** Connection failures that leave no doubt the backend never saw the request (a reset or hang-up leaves some). */
const NEVER_REACHED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

const neverReached = (error: Error): boolean => NEVER_REACHED.has(String((error as { code?: unknown }).code))

/** Sends a whole (rewritten) body with its own length; the original length and encoding no longer apply. */
const sendWhole = (res: ServerResponse, upstream: IncomingMessage, body: Buffer): void => {
  const headers = Forwarding.response(upstream.headers)
  delete headers["content-length"]
  headers["content-length"] = String(body.byteLength)
  res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, headers)
  res.end(body)
}

const stream = (res: ServerResponse, upstream: IncomingMessage, head: ReadonlyArray<Buffer> = []): void =>
  relayResponse(upstream, res, head)

/** Reads a card (up to MAX_CARD_BYTES) and sends it rewritten; anything unexpected is passed on as it came. */
const relayCard = (res: ServerResponse, upstream: IncomingMessage, targetUrl: string, publicBase: string): void => {
  const type = String(upstream.headers["content-type"] ?? "")
  if (upstream.statusCode !== 200 || !type.includes("json") || upstream.headers["content-encoding"] !== undefined) {
    stream(res, upstream)
    return
  }
  const chunks: Array<Buffer> = []
  let size = 0
  const onData = (chunk: Buffer) => {
    chunks.push(chunk)
    size += chunk.byteLength
    if (size > AgentCard.MAX_CARD_BYTES) {
      upstream.off("data", onData)
      upstream.off("end", onEnd)
      upstream.pause()
      stream(res, upstream, chunks)
    }
  }
  const onEnd = () => {
    const body = Buffer.concat(chunks)
    let card: unknown
    try {
      card = JSON.parse(body.toString("utf8"))
    } catch {
      return sendWhole(res, upstream, body)
    }
    sendWhole(res, upstream, Buffer.from(JSON.stringify(AgentCard.rewrite(card, targetUrl, publicBase))))
  }
  upstream.on("data", onData)
  upstream.once("end", onEnd)
  upstream.once("error", (error) => res.destroy(error))
}

/** How long the DELETE ending an abandoned MCP session may take. */
const END_TIMEOUT = Duration.seconds(10)

/**
 * `headersTimeout`: how long a backend may take to send its answer's headers (none: as long as it likes), watched
 * on `deadlines`.
 */
export const make = (headersTimeout: Option.Option<Duration.Duration>, deadlines: Deadlines.Deadlines) =>
  Effect.gen(function* () {
    // Keep-alive to backends: a fresh TCP connection per proxied request would cost more than the mesh hop itself.
    const agents = yield* Effect.acquireRelease(
      Effect.sync(() => ({ http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) })),
      (a) =>
        Effect.sync(() => {
          a.http.destroy()
          a.https.destroy()
        }),
    )

    /** A request to the target's backend, over the kept-alive connections. */
    const open = (target: Target, method: string, headers: Forwarding.OutgoingHeaders) => {
      const backend = target.backend
      const https = backend.protocol === "https:"
      return (https ? httpsRequest : httpRequest)({
        protocol: backend.protocol,
        hostname: backend.hostname,
        port: backend.port,
        path: Forwarding.backendPath(backend, target.path, target.query),
        method,
        headers,
        agent: https ? agents.https : agents.http,
      })
    }

    /**
     * Sends the request to the backend and streams the answer; completes when the peer's response has closed. A
     * backend that sends no headers within `headersTimeout` has its request destroyed and the peer gets 502.
     */
    const forward = (req: IncomingMessage, res: ServerResponse, target: Target): Effect.Effect<void> =>
      Effect.flatMap(TraceContext.current, (traceparent) => send(req, res, target, traceparent)).pipe(
        Spans.withSpan("mesh.backend", {
          kind: "client",
          captureStackTrace: false,
          attributes: {
            "mesh.service.type": target.service.type,
            "mesh.service.name": target.service.name,
            "http.request.method": TraceContext.method(req.method ?? "GET"),
          },
        }),
      )

    const send = (
      req: IncomingMessage,
      res: ServerResponse,
      target: Target,
      traceparent: Option.Option<string>,
    ): Effect.Effect<void> =>
      Effect.async<void>((resume) => {
        const backend = target.backend
        const headers = Forwarding.toBackend(req.headers, target.caller, backend.host)
        // The backend continues our trace from this hop's span.
        if (Option.isSome(traceparent)) headers.traceparent = traceparent.value
        const origin = Forwarding.originOf(req.headers)
        const card =
          target.service.type === "a2a" && req.method === "GET" && AgentCard.CARD_PATHS.has(target.path)
            ? origin
            : undefined
        // The card is rewritten and MCP answers are filtered, so they must come unencoded.
        const mcp = target.mcp
        // Only a grant of single tools has answers to filter; a whole-service grant may still send a checked body.
        const filter = mcp?.grant._tag === "Tools" ? mcp.grant : undefined
        if (card !== undefined || filter !== undefined) delete headers["accept-encoding"]
        // The body that was checked goes in place of the one that came.
        if (mcp?.body !== undefined) {
          delete headers["content-encoding"]
          headers["content-length"] = String(mcp.body.byteLength)
        }
        let outgoing = open(target, req.method ?? "GET", headers)
        // The request goes and the body left drains; destroying the body would take the peer's stream with it.
        const abandon = () => {
          req.unpipe(outgoing)
          req.resume()
          outgoing.destroy()
        }
        const cancelLate = Option.isNone(headersTimeout)
          ? () => undefined
          : deadlines.after(headersTimeout.value, () => {
              outgoing.off("error", onError)
              outgoing.once("error", () => undefined)
              abandon()
              ErrorResponse.write(
                res,
                new BadGateway({
                  message: `the ${target.service.type} service ${target.service.name} did not answer within ${Duration.format(headersTimeout.value)}`,
                }),
              )
            })
        const onResponse = (upstream: IncomingMessage) => {
          cancelLate()
          target.onResponse?.(upstream)
          if (filter !== undefined) return relayFiltered(upstream, res, filter)
          if (card === undefined) return stream(res, upstream)
          relayCard(res, upstream, target.targetUrl, `${card.proto}://${card.host}${card.prefix}`)
        }
        // A body held whole (or none) can be sent again; one streamed from the peer cannot.
        const replayable = mcp?.body !== undefined || !hasBody(req)
        let retried = false
        const onError = (error: Error) => {
          // A kept-alive connection the backend closed as we reused it: it never read the request (Node's advice).
          if (!retried && replayable && outgoing.reusedSocket && describe(error) === "ECONNRESET") {
            retried = true
            outgoing = open(target, req.method ?? "GET", headers)
            return start()
          }
          cancelLate()
          // The request body is left to drain: destroying it would take the peer's stream, and this answer, with it.
          req.unpipe(outgoing)
          req.resume()
          const message = `the ${target.service.type} service ${target.service.name} did not answer: ${describe(error)}`
          ErrorResponse.write(
            res,
            neverReached(error) ? new BackendUnreachable({ message }) : new BadGateway({ message }),
          )
        }
        const start = () => {
          outgoing.once("response", onResponse)
          outgoing.once("error", onError)
          if (mcp?.body !== undefined) outgoing.end(mcp.body)
          else if (hasBody(req)) relayBody(req, outgoing)
          else outgoing.end()
        }
        // The peer went away (stream reset or closed) before the answer ended: so does the backend request.
        const done = () => {
          cancelLate()
          if (!res.writableFinished) outgoing.destroy()
          resume(Effect.void)
        }
        res.once("close", done)
        start()
        // Interrupted: whoever interrupted answers the peer.
        return Effect.sync(() => {
          cancelLate()
          res.off("close", done)
          outgoing.off("error", onError)
          outgoing.once("error", () => undefined)
          abandon()
        })
      })

    /** For the initialize of a session opened on a caller's behalf (McpOpen). */
    const exchange: Exchange = (target, callerHeaders, extra, body, limits) =>
      Effect.async<Answer, string>((resume) => {
        const backend = target.backend
        const headers = { ...Forwarding.toBackend(callerHeaders, target.caller, backend.host), ...extra }
        delete headers["accept-encoding"]
        delete headers["content-encoding"]
        delete headers["transfer-encoding"]
        headers["content-length"] = String(body.byteLength)
        let outgoing = open(target, "POST", headers)
        let settled = false
        const settle = (result: Effect.Effect<Answer, string>) => {
          if (settled) return
          settled = true
          cancelLate()
          resume(result)
        }
        const cancelLate = deadlines.after(limits.timeout, () => {
          outgoing.destroy()
          settle(Effect.fail(`no answer within ${Duration.format(limits.timeout)}`))
        })
        let retried = false
        const start = () => {
          outgoing.once("error", (error) => {
            // As in send: a kept-alive connection closed as it was reused never carried the request.
            if (!retried && outgoing.reusedSocket && describe(error) === "ECONNRESET") {
              retried = true
              outgoing = open(target, "POST", headers)
              return start()
            }
            settle(Effect.fail(describe(error)))
          })
          outgoing.once("response", (upstream) => {
            const chunks: Array<Buffer> = []
            let size = 0
            upstream.on("data", (chunk: Buffer) => {
              size += chunk.byteLength
              if (size > limits.maxBytes) {
                upstream.destroy()
                return settle(Effect.fail(`an answer over ${limits.maxBytes} bytes`))
              }
              chunks.push(chunk)
            })
            upstream.once("error", (error) => settle(Effect.fail(describe(error))))
            upstream.once("end", () =>
              settle(
                Effect.succeed({
                  status: upstream.statusCode ?? 502,
                  headers: upstream.headers,
                  body: Buffer.concat(chunks),
                }),
              ),
            )
          })
          outgoing.end(body)
        }
        start()
        return Effect.sync(() => {
          settled = true
          cancelLate()
          outgoing.destroy()
        })
      })

    /**
     * Ends an MCP session at the backend, as its client would: a DELETE with its id (and protocol version, when one
     * was seen), in the name of the peer that opened it. The answer is read and dropped; why it failed, if it did,
     * comes back as text.
     */
    const endSession = (target: Target, sessionId: string, protocolVersion: string | undefined) =>
      Effect.async<number, string>((resume) => {
        const headers: Forwarding.OutgoingHeaders = {
          ...Forwarding.toBackend({}, target.caller, target.backend.host),
          "mcp-session-id": sessionId,
          ...(protocolVersion === undefined ? {} : { "mcp-protocol-version": protocolVersion }),
        }
        const outgoing = open(target, "DELETE", headers)
        const cancelLate = deadlines.after(END_TIMEOUT, () => {
          outgoing.destroy()
          resume(Effect.fail(`no answer within ${Duration.format(END_TIMEOUT)}`))
        })
        outgoing.once("error", (error) => {
          cancelLate()
          resume(Effect.fail(describe(error)))
        })
        outgoing.once("response", (upstream) => {
          cancelLate()
          upstream.resume()
          resume(Effect.succeed(upstream.statusCode ?? 502))
        })
        outgoing.end()
        return Effect.sync(() => {
          cancelLate()
          outgoing.destroy()
        })
      })

    return { forward, exchange, endSession }
  }) satisfies Effect.Effect<unknown, never, Scope.Scope>

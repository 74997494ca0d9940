/**
 * PeerProxy over node:http and the MeshHost: the peer is connected (or reached: known addresses, then a router's
 * relay) and authenticated, its verified labels are checked against the caller's requirement and the operator's
 * floor, and the request goes out as HTTP/1.1 on a new `/mesh/proxy/1.0.0` stream, written by `http.request` onto
 * a StreamSocket. The stream is ours: when the caller gives up before the response ended it is reset, which the
 * serving peer sees at once and passes on to its backend.
 */
import type { IncomingMessage } from "node:http"
import { request as httpRequest } from "node:http"
import { Readable } from "node:stream"
import { Effect, Either, Exit, Layer, Option, Redacted, Runtime, Scope } from "effect"
import * as NodeConfig from "../../config/NodeConfig.js"
import * as AgentScope from "../../domain/AgentScope.js"
import { BadGateway, BadRequest, Forbidden } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as Labels from "../../domain/Labels.js"
import * as McpOpen from "../../domain/McpOpen.js"
import * as PeerKey from "../../domain/PeerKey.js"
import * as TraceContext from "../../http/TraceContext.js"
import { ProtocolRefused } from "../../p2p/OptimisticSelect.js"
import { StreamSocket } from "../../p2p/StreamSocket.js"
import type { AuthenticatedPeer } from "../../p2p/Trust.js"
import type * as Deadlines from "../../platform/Deadlines.js"
import * as Finalizer from "../../platform/Finalizer.js"
import * as Spans from "../../platform/Spans.js"
import { type Agent, CurrentAgent, TOKEN_HEADER } from "../../services/agents/CurrentAgent.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import {
  type FetchInit,
  PeerProxy,
  PROTOCOL,
  type ProxyError,
  type ProxyRequest,
} from "../../services/proxy/PeerProxy.js"
import * as McpStreamOrder from "./McpStreamOrder.js"

/** Statuses whose responses carry no body; a web Response refuses one. */
const NULL_BODY = new Set([101, 204, 205, 304])

/** Method names a Request writes in capitals (the fetch standard's normalization). */
const NORMALIZED = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * The method, headers and body of a fetch init. A body already in memory (text or bytes, the common case: an MCP
 * client's JSON) is passed as bytes; any other kind goes through a Request, which normalizes it, as a stream.
 */
const normalize = (
  init: RequestInit,
): { method: string; headers: Record<string, string>; body: Readable | Uint8Array | null } => {
  const headers: Record<string, string> = {}
  const raw = init.body
  if (raw === undefined || raw === null || typeof raw === "string" || raw instanceof Uint8Array) {
    const method = init.method ?? "GET"
    if (!TOKEN.test(method)) throw new TypeError("not a valid HTTP method")
    new Headers(init.headers).forEach((value, key) => {
      headers[key] = value
    })
    const body = raw === undefined || raw === null ? null : typeof raw === "string" ? Buffer.from(raw) : raw
    if (body !== null && typeof raw === "string" && headers["content-type"] === undefined) {
      headers["content-type"] = "text/plain;charset=UTF-8"
    }
    const upper = method.toUpperCase()
    return { method: NORMALIZED.has(upper) ? upper : method, headers, body }
  }
  // The Request's URL is never used.
  const web = new Request("http://peer.invalid/", { ...init, duplex: "half" })
  web.headers.forEach((value, key) => {
    headers[key] = value
  })
  return { method: web.method, headers, body: web.body === null ? null : Readable.fromWeb(web.body) }
}

/**
 * A caller's abort signal as the deadline for the response head: the exchange's waits watch it, where racing the
 * exchange against the signal would cost two fibers a request.
 */
const untilAborted = (signal: AbortSignal): Deadlines.Expiry => ({
  expired: () => signal.aborted,
  watch: (late) => {
    if (signal.aborted) {
      late()
      return () => undefined
    }
    const entry = () => late()
    signal.addEventListener("abort", entry, { once: true })
    return () => signal.removeEventListener("abort", entry)
  },
  cancel: () => undefined,
})

/** The peer continues our trace from the proxy span, whatever `traceparent` the local client sent. */
const withTraceparent = (headers: Forwarding.OutgoingHeaders, traceparent: Option.Option<string>) => {
  if (Option.isSome(traceparent)) headers.traceparent = traceparent.value
  return headers
}

/** The agent's token goes to the serving peer, which verifies it; the client's own `X-Mesh-*` were removed. */
const withOpen = (headers: Forwarding.OutgoingHeaders, version: string | undefined) => {
  if (version !== undefined) headers[McpOpen.OPEN] = version
  return headers
}

const withAgent = (headers: Forwarding.OutgoingHeaders, agent: Agent | undefined) => {
  if (agent !== undefined) headers[TOKEN_HEADER] = Redacted.value(agent.token)
  return headers
}

const pairs = (labels: Readonly<Record<string, string>>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(",")

export const layer = Layer.effect(
  PeerProxy,
  Effect.gen(function* () {
    const host = yield* MeshHost
    const settings = yield* NodeConfig.NodeConfig
    const floor = settings.file.egress.require_labels
    const cap = NodeConfig.maxResponseBytes(settings)
    const tooLarge = (peerId: string) =>
      `the answer of peer ${peerId} exceeds ${cap} bytes, this node's cap on a peer's response (max_response_bytes)`
    const runtime = yield* Effect.runtime<never>()
    const order = yield* McpStreamOrder.make

    const checkLabels = (
      peer: AuthenticatedPeer,
      required: Readonly<Record<string, string>> | undefined,
    ): Effect.Effect<void, Forbidden> => {
      if (required !== undefined && !Labels.attestsAny(peer.labels, required)) {
        return new Forbidden({
          message: `peer ${peer.peerId} attests none of the required labels (${pairs(required)})`,
        })
      }
      const lacking = Labels.missing(peer.labels, floor)
      return lacking.length > 0
        ? new Forbidden({
            message: `peer ${peer.peerId} does not attest the operator's egress.require_labels: lacks ${lacking.join(",")}`,
          })
        : Effect.void
    }

    /** Checks the request, reaches the peer and opens the stream; nothing is sent yet. */
    const open = (request: ProxyRequest): Effect.Effect<StreamSocket, ProxyError> =>
      Effect.gen(function* () {
        const service = Forwarding.checkService(request.type, request.name)
        if (Either.isLeft(service)) return yield* new BadRequest({ message: service.left })
        if (!PeerKey.isPeerId(request.peerId)) {
          return yield* new BadRequest({ message: "not a peer id" })
        }
        // Recorded once checked: before, they are whatever the local client wrote.
        yield* Spans.annotate("mesh.service.name", request.name)
        yield* Spans.annotate("mesh.peer.id", request.peerId)
        if (request.requiredLabels !== undefined && Object.keys(request.requiredLabels).length === 0) {
          return yield* new BadRequest({ message: "X-Mesh-Required-Labels names no label" })
        }
        const agent = request.agent
        if (agent !== undefined) {
          // Out of the agent's scope: refused here, before anything leaves the machine.
          const decision = AgentScope.serviceAllowed(agent.scope, {
            type: service.right,
            name: request.name,
            method: request.method,
            path: request.path,
          })
          if (decision._tag === "Denied") return yield* new Forbidden({ message: decision.reason })
        }
        const unreachable = (reason: string) =>
          new BadGateway({ message: `peer ${request.peerId} is unreachable: ${reason}` })
        const peer = yield* host.connect(request.peerId).pipe(Effect.mapError((e) => unreachable(e.reason)))
        yield* checkLabels(peer, request.requiredLabels)
        if (agent !== undefined) {
          const decision = AgentScope.labelsAllowed(agent.scope, peer.labels)
          if (decision._tag === "Denied") return yield* new Forbidden({ message: decision.reason })
        }
        // Optimistic: the request is written behind the protocol's proposal, not a round trip after it.
        const { stream, connection, proposed } = yield* host
          .openStream(request.peerId, PROTOCOL, { optimistic: true })
          .pipe(Effect.mapError((e) => unreachable(e.reason)))
        return new StreamSocket(stream, connection, proposed)
      })

    /**
     * Writes the request onto the socket and completes with the response head. Every byte read from the peer counts
     * against the cap; past it the stream is reset, so the peer stops sending and what was read is let go.
     */
    const exchange = (
      socket: StreamSocket,
      request: ProxyRequest,
      traceparent: Option.Option<string>,
      onTooLarge: ((message: string) => void) | undefined,
    ): Effect.Effect<IncomingMessage, BadGateway> =>
      Effect.async<IncomingMessage, BadGateway>((resume) => {
        let read = 0
        let overflowed = false
        const count = (chunk: Uint8Array) => {
          read += chunk.byteLength
          if (read <= cap || overflowed) return
          overflowed = true
          socket.off("data", count)
          onTooLarge?.(tooLarge(request.peerId))
          socket.abort(new Error(tooLarge(request.peerId)))
        }
        socket.on("data", count)
        // A refused protocol means the request reached no handler; past that it was sent and may have run.
        const failed = (error: Error) =>
          resume(
            Effect.fail(
              error instanceof ProtocolRefused && !overflowed
                ? new BadGateway({ message: `peer ${request.peerId} is unreachable: stream refused: ${error.message}` })
                : new BadGateway({
                    message: overflowed
                      ? tooLarge(request.peerId)
                      : `peer ${request.peerId} did not answer: ${error.message.slice(0, 200)}`,
                    delivered: true,
                  }),
            ),
          )
        const target = `/${request.type}/${request.name}${request.path}${request.query.length > 0 ? `?${request.query}` : ""}`
        let outgoing: ReturnType<typeof httpRequest>
        try {
          outgoing = httpRequest({
            createConnection: () => socket,
            method: request.method,
            path: target,
            headers: withOpen(
              withAgent(
                withTraceparent(Forwarding.toPeer(request.headers, request.origin), traceparent),
                request.agent,
              ),
              request.openMcpSession,
            ),
          })
        } catch (error) {
          return failed(error instanceof Error ? error : new Error(String(error)))
        }
        // Given up on: the caller's scope resets the stream.
        const unwatch = request.headDeadline?.watch(() => failed(new Error("no response head in time")))
        outgoing.once("response", (response) => {
          unwatch?.()
          resume(Effect.succeed(response))
        })
        outgoing.once("error", (error) => {
          unwatch?.()
          failed(error)
        })
        if (request.headDeadline?.expired() === true) return
        const body = request.body
        if (body === undefined) outgoing.end()
        else if (body instanceof Uint8Array) {
          // A body at hand goes with its length, in the same write as the head.
          outgoing.setHeader("content-length", String(body.byteLength))
          outgoing.end(body)
        } else {
          body.once("error", (error) => outgoing.destroy(error))
          body.pipe(outgoing)
        }
        return unwatch === undefined ? undefined : Effect.sync(unwatch)
      })

    /**
     * `client`: the request comes from a local client through the route (not from the node's own code), whose 2025
     * session's first notification arms the wait for its GET (McpStreamOrder); the node's own MCP clients are ours.
     */
    const forwardWith = (asked: ProxyRequest, onTooLarge?: (message: string) => void, client = false) =>
      Effect.gen(function* () {
        // Only the path that was checked goes out, in its canonical form.
        const path = Forwarding.canonicalPath(asked.path)
        if (Either.isLeft(path)) return yield* new BadRequest({ message: path.left })
        const current = asked.agent ?? Option.getOrUndefined(yield* Effect.serviceOption(CurrentAgent))
        const request = { ...asked, path: path.right, ...(current === undefined ? {} : { agent: current }) }
        let response: IncomingMessage | undefined
        const sent = Effect.gen(function* () {
          const socket = yield* Finalizer.acquire(open(request), (socket) =>
            Effect.sync(() => {
              // A response read to its end leaves a stream both sides closed; anything else is abandoned.
              if (response?.complete === true) socket.destroy()
              else socket.abort(new Error("the caller went away"))
            }),
          )
          return yield* exchange(socket, request, yield* TraceContext.current, onTooLarge)
        })
        // A 2025-era MCP session's GET stream opens at the backend before the session's later requests arrive.
        const session = McpStreamOrder.sessionKey(request.peerId, request.type, request.name, request.headers)
        response = yield* request.method === "GET"
          ? order.opens(session, sent)
          : Effect.zipRight(order.after(session), sent)
        if (client && response.statusCode === 202) yield* order.accepted(session)
        yield* Spans.annotate("http.response.status_code", response.statusCode ?? 0)
        // A declared length past the cap is refused before a byte of the body is relayed (the scope resets it).
        const declared = Number(response.headers["content-length"] ?? 0)
        if (declared > cap) {
          onTooLarge?.(tooLarge(request.peerId))
          return yield* new BadGateway({ message: tooLarge(request.peerId) })
        }
        return response
      }).pipe(
        Spans.withSpan("mesh.proxy", {
          kind: "client",
          captureStackTrace: false,
          attributes: {
            "mesh.service.type": asked.type,
            "http.request.method": TraceContext.method(asked.method),
          },
        }),
      )

    const forward = (request: ProxyRequest) => forwardWith(request, undefined, true)

    const fetch = (
      peerId: string,
      type: Parameters<PeerProxy["Type"]["fetch"]>[1],
      name: string,
      path: string,
      init: FetchInit = {},
    ): Effect.Effect<Response, ProxyError> =>
      Effect.gen(function* () {
        // The signal is watched here, not handed to a Request: undici would keep a listener on it per request.
        const { requiredLabels, onTooLarge, agent, openMcpSession, signal: _signal, ...rest } = init
        const q = path.indexOf("?")
        const rawPath = q === -1 ? path : path.slice(0, q)
        const message = yield* Effect.try({
          try: () => normalize(rest),
          catch: (error) => new BadRequest({ message: `bad request: ${String(error).slice(0, 200)}` }),
        })
        const scope = yield* Scope.make()
        const close = () => Runtime.runFork(runtime)(Scope.close(scope, Exit.void))
        const response = yield* forwardWith(
          {
            peerId,
            type,
            name,
            path: rawPath.length === 0 || rawPath.startsWith("/") ? rawPath : `/${rawPath}`,
            query: q === -1 ? "" : path.slice(q + 1),
            method: message.method,
            headers: message.headers,
            ...(message.body === null ? {} : { body: message.body }),
            ...(requiredLabels === undefined ? {} : { requiredLabels }),
            ...(agent === undefined ? {} : { agent }),
            ...(openMcpSession === undefined ? {} : { openMcpSession }),
            ...(init.signal === undefined || init.signal === null ? {} : { headDeadline: untilAborted(init.signal) }),
          },
          onTooLarge,
        ).pipe(
          Scope.extend(scope),
          Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, exit))),
        )
        // The exchange ends with the body: read to its end, cancelled, or aborted through the signal. A caller may
        // pass one signal for many requests (the MCP SDK's client does, for a session's life): the listener goes
        // with the exchange, or they would pile up on it.
        const signal = init.signal
        const onAbort = () => close()
        response.once("close", () => {
          signal?.removeEventListener("abort", onAbort)
          close()
        })
        signal?.addEventListener("abort", onAbort, { once: true })
        if (signal?.aborted === true) close()
        const status = response.statusCode ?? 502
        const out = new Headers()
        for (const [key, value] of Object.entries(Forwarding.response(response.headers))) {
          for (const v of typeof value === "string" ? [value] : value) out.append(key, v)
        }
        // The serving node's own answer to the request to open a session: the one X-Mesh header let through.
        const opened = openMcpSession === undefined ? undefined : McpOpen.version(response.headers[McpOpen.OPENED])
        if (opened !== undefined) out.set(McpOpen.OPENED, opened)
        if (NULL_BODY.has(status)) response.resume()
        return new Response(NULL_BODY.has(status) ? null : Readable.toWeb(response), {
          status,
          statusText: response.statusMessage ?? "",
          headers: out,
        })
      })

    return PeerProxy.of({ forward, fetch })
  }),
)

/**
 * The node:http listener under every HTTP server we run (control plane, probe listeners, the node's local API):
 *
 * - a request must arrive whole within `requestTimeout`; one that does not (a body that never comes, headers sent a
 *   byte at a time) is answered 408 and its connection closed, whatever the handler was waiting for;
 * - requests the HTTP parser refuses get the one error body instead of node's bare status line;
 * - stopping drains: the listener stops accepting, idle connections close, requests in flight get `shutdownGrace` to
 *   finish, then their connections are cut, so a process stops in bounded time whatever its clients do;
 * - an optional `Front` sees each request before the platform does and may answer it on node:http itself: hot routes
 *   whose answer is bytes already in memory skip a fiber, a router and a response conversion per request.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import { createServer as createTlsServer, type ServerOptions as TlsOptions } from "node:https"
import type { ListenOptions } from "node:net"
import type { Duplex } from "node:stream"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Schedule } from "effect"
import * as TraceContext from "./TraceContext.js"

export interface ListenerOptions {
  /** How long a client may take to send a whole request, headers and body. */
  readonly requestTimeout: Duration.Duration
  /** How long requests in flight may run on once stopping starts; zero cuts them at once. */
  readonly shutdownGrace: Duration.Duration
}

export const defaults: ListenerOptions = {
  requestTimeout: Duration.seconds(30),
  shutdownGrace: Duration.seconds(5),
}

/**
 * Answers the requests it recognises straight on node:http and returns true; false hands the request on to the
 * platform's handler untouched (nothing may be read from or written to it then).
 */
export type Front = (request: IncomingMessage, response: ServerResponse) => boolean

/** What we answer for each parser refusal; the rest are 400. */
const CLIENT_ERRORS: Record<string, readonly [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, "request_timeout", "request not received in time"],
  HPE_HEADER_OVERFLOW: [431, "headers_too_large", "request headers too large"],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, "payload_too_large", "request body too large"],
}

/** Answers a request node:http gave up on, if nothing was written yet, and closes the connection. */
const onClientError = (error: Error & { readonly code?: string }, socket: Duplex): void => {
  const written = (socket as Duplex & { readonly bytesWritten?: number }).bytesWritten ?? 0
  if (socket.writable && written === 0 && error.code !== "ECONNRESET") {
    const [status, code, message] = CLIENT_ERRORS[error.code ?? ""] ?? [400, "bad_request", "malformed request"]
    const body = JSON.stringify({ error: code, message })
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncache-control: no-store\r\n` +
        `connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}

/** A node:http server (or https, given TLS options) with the timeouts and parser answers above. */
export const makeServer = (options: ListenerOptions, tls?: TlsOptions): Server => {
  const requestTimeout = Math.max(1, Duration.toMillis(options.requestTimeout))
  const timeouts = {
    requestTimeout,
    // node:http refuses a headers timeout longer than the request timeout.
    headersTimeout: Math.min(60_000, requestTimeout),
    // How often node looks for expired requests: the timeout holds to within this.
    connectionsCheckingInterval: Math.min(1_000, requestTimeout),
  }
  // An https server is a node:http server underneath (same events, same request handling).
  const server =
    tls === undefined ? createServer(timeouts) : (createTlsServer({ ...timeouts, ...tls }) as unknown as Server)
  server.on("clientError", onClientError)
  holdEarlyRequests(server)
  answerFrontFirst(server)
  return server
}

const fronts = new WeakMap<Server, Front>()

/**
 * node:http hands a request to every `request` listener, and the platform installs its own; a request the front
 * answers must not reach it, so the front sits in the server's `emit`, ahead of every listener.
 */
const answerFrontFirst = (server: Server): void => {
  const emit = server.emit as (this: Server, event: string | symbol, ...args: Array<unknown>) => boolean
  server.emit = function (this: Server, event: string | symbol, ...args: Array<unknown>): boolean {
    if (event === "request") {
      const front = fronts.get(server)
      if (front?.(args[0] as IncomingMessage, args[1] as ServerResponse) === true) return true
    }
    return emit.call(this, event, ...args)
  } as Server["emit"]
}

/**
 * The platform starts listening before the application's handler is installed; a request arriving in between would
 * find no handler and wait out the request timeout. Such requests are held and handed to the handler once it is
 * installed (the first other `request` listener).
 */
const holdEarlyRequests = (server: Server): void => {
  const held: Array<readonly [IncomingMessage, ServerResponse]> = []
  const hold = (req: IncomingMessage, res: ServerResponse) => {
    held.push([req, res])
  }
  const onListener = (event: string | symbol) => {
    if (event !== "request") return
    server.off("newListener", onListener)
    server.off("request", hold)
    // `newListener` fires before the listener is added: replay once it is.
    queueMicrotask(() => {
      for (const [req, res] of held.splice(0)) server.emit("request", req, res)
    })
  }
  server.on("request", hold)
  server.on("newListener", onListener)
}

/** Puts `front` ahead of the handlers of `server` (made by `makeServer`) for as long as the scope is open. */
export const withFront = (server: Server, front: Front) =>
  Effect.acquireRelease(
    Effect.sync(() => void fronts.set(server, front)),
    () => Effect.sync(() => void fronts.delete(server)),
  )

/** Stops accepting, lets requests in flight finish within the grace, then cuts what is left. */
export const drain = (server: Server, grace: Duration.Duration) =>
  Effect.gen(function* () {
    const closed = yield* Deferred.make<void>()
    server.close(() => Deferred.unsafeDone(closed, Exit.void))
    if (Duration.toMillis(grace) > 0) {
      // Connections whose request just finished become idle and would otherwise wait out their keep-alive.
      const closeIdle = Effect.sync(() => server.closeIdleConnections()).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(100))),
      )
      // Finalizers run uninterruptibly in a fiber already interrupted: the timed wait runs in a fiber of its own, where
      // the race and the timeout can stop whichever side lost.
      yield* Effect.raceFirst(Deferred.await(closed), closeIdle).pipe(
        Effect.timeout(grace),
        Effect.ignore,
        Effect.interruptible,
        Effect.fork,
        Effect.flatMap(Fiber.join),
      )
    }
    server.closeAllConnections()
  })

/**
 * Serves `app` (a layer that installs handlers on the HttpServer, such as `HttpApiBuilder.serve()`) on `listen`,
 * with `front`, when given, ahead of it. The drain runs before `app` removes its handlers, so requests in flight can
 * still be answered.
 */
export const serve = <E, R, R2 = never>(
  app: Layer.Layer<never, E, R>,
  listen: ListenOptions,
  options: ListenerOptions = defaults,
  front?: Effect.Effect<Front, never, R2>,
) =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      const server = makeServer(options)
      const withFront =
        front === undefined
          ? Layer.empty
          : Layer.scopedDiscard(
              Effect.acquireRelease(
                Effect.tap(front, (f) => Effect.sync(() => fronts.set(server, f))),
                () => Effect.sync(() => fronts.delete(server)),
              ),
            )
      return Layer.scopedDiscard(Effect.addFinalizer(() => drain(server, options.shutdownGrace))).pipe(
        Layer.provideMerge(HttpMiddleware.withTracerDisabledWhen(app, TraceContext.platformSpansOff)),
        Layer.provideMerge(withFront),
        Layer.provideMerge(NodeHttpServer.layer(() => server, listen)),
      )
    }),
  )

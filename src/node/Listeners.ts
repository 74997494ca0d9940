/**
 * The node's listeners, each serving the local API with what it knows of its callers: TCP on `--bind-addr` (API
 * token; TLS with `--tls-cert`, and with `--tls-ca` only clients holding a certificate that CA signed may connect,
 * and they need no token) and the Unix socket (created 0600, under a umask, in a 0700 folder this user owns:
 * opening it is the credential; a stale file from an earlier run is replaced). Both use the listener every HTTP server of ours shares
 * (src/http/Listener.ts): request timeout, parser refusals in the error body, draining on stop.
 */
import { existsSync, lstatSync, readFileSync, unlinkSync } from "node:fs"
import type { Server } from "node:http"
import type { ListenOptions } from "node:net"
import { dirname } from "node:path"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import type * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Data, Effect, Either, Layer, Option } from "effect"
import type { ListenAddress } from "../config/ControlPlaneConfig.js"
import { NodeConfig } from "../config/NodeConfig.js"
import * as Listener from "../http/Listener.js"
import * as TraceContext from "../http/TraceContext.js"
import * as App from "./App.js"
import * as Front from "./Front.js"
import { type ListenerInfo, Listener as ListenerTag } from "./Listener.js"
import * as PrivatePaths from "./PrivatePaths.js"
import * as RequestMetrics from "./RequestMetrics.js"

export interface Bound {
  readonly tcp: Option.Option<ListenAddress>
  readonly socket: Option.Option<string>
}

/** Where the node's listeners are bound (ports resolved), for the harness and `mesh-one`. */
export class LocalApi extends Context.Tag("mesh/node/LocalApi")<LocalApi, Bound>() {}

export class ListenError extends Data.TaggedError("ListenError")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

/** Linux's limit on a socket path (sun_path), less the terminating NUL. */
const MAX_SOCKET_PATH = 107

const tcpOf = (address: HttpServer.Address): ListenAddress =>
  address._tag === "TcpAddress" ? { host: address.hostname, port: address.port } : { host: "", port: 0 }

const readPem = (flag: string, path: string) =>
  Effect.try({
    try: () => readFileSync(path),
    catch: (cause) =>
      new ListenError({ reason: `--${flag} ${path}: ${(cause as NodeJS.ErrnoException).code ?? "unreadable"}` }),
  })

export const layer = Layer.scoped(
  LocalApi,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const metrics = yield* RequestMetrics.make
    const app = yield* App.make(metrics)

    /** Serves the API on a server; stopping drains it before the handlers go. */
    const serve = (server: Server, listen: ListenOptions, info: ListenerInfo, what: string) =>
      Effect.gen(function* () {
        const http = yield* NodeHttpServer.make(() => server, listen).pipe(
          Effect.mapError((error) => new ListenError({ reason: `${what}: ${String(error.cause)}` })),
        )
        yield* http
          .serve(Effect.provideService(app, ListenerTag, info))
          .pipe(HttpMiddleware.withTracerDisabledWhenEffect(TraceContext.platformSpansOff))
        yield* Listener.withFront(server, yield* Front.make(info, metrics, App.fast))
        yield* Effect.addFinalizer(() => Listener.drain(server, Listener.defaults.shutdownGrace))
        return http.address
      })

    const tcp = yield* Effect.transposeOption(
      Option.map(settings.bindAddress, (address) =>
        Effect.gen(function* () {
          const tls = Option.getOrUndefined(settings.tls)
          const server =
            tls === undefined
              ? Listener.makeServer(Listener.defaults)
              : Listener.makeServer(Listener.defaults, {
                  cert: yield* readPem("tls-cert", tls.certPath),
                  key: yield* readPem("tls-key", tls.keyPath),
                  ...(Option.isSome(tls.caPath)
                    ? { ca: yield* readPem("tls-ca", tls.caPath.value), requestCert: true, rejectUnauthorized: true }
                    : {}),
                })
          const info: ListenerInfo = {
            kind: tls === undefined ? "tcp" : "tls",
            verifiedClient: tls !== undefined && Option.isSome(tls.caPath),
          }
          const where = `--bind-addr ${address.host}:${address.port}`
          return tcpOf(yield* serve(server, { host: address.host, port: address.port }, info, where))
        }),
      ),
    )

    const socket = yield* Effect.transposeOption(
      Option.map(settings.socketPath, (path) =>
        Effect.gen(function* () {
          if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
            return yield* new ListenError({ reason: `--socket-path ${path} is longer than ${MAX_SOCKET_PATH} bytes` })
          }
          if (existsSync(path)) {
            if (!lstatSync(path).isSocket()) {
              return yield* new ListenError({ reason: `--socket-path ${path} exists and is not a socket` })
            }
            unlinkSync(path)
          }
          const folder = PrivatePaths.privateFolder(dirname(path), "the socket's folder")
          if (Either.isLeft(folder)) return yield* new ListenError({ reason: folder.left })
          const info: ListenerInfo = { kind: "socket", verifiedClient: false }
          const server = PrivatePaths.listenPrivately(Listener.makeServer(Listener.defaults))
          yield* serve(server, { path }, info, `--socket-path ${path}`)
          yield* Effect.addFinalizer(() => Effect.sync(() => existsSync(path) && unlinkSync(path)))
          return path
        }),
      ),
    )

    return { tcp, socket }
  }),
)

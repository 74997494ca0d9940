/**
 * The node's listeners, each serving the local API with what it knows of its callers: TCP on `--bind-addr` (API
 * token; TLS with `--tls-cert`, and with `--tls-ca` only clients holding a certificate that CA signed may connect,
 * and they need no token), the Unix socket (mode 0600 in a 0700 folder: opening it is the credential; a stale file
 * from an earlier run is replaced) and the metrics address (probes and metrics, no authentication).
 */
import { chmodSync, existsSync, lstatSync, readFileSync, unlinkSync } from "node:fs"
import type { Server } from "node:http"
import { createServer } from "node:http"
import { createServer as createTlsServer } from "node:https"
import type { ListenOptions } from "node:net"
import type { HttpServer, HttpServerError } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Data, Effect, Layer, Option } from "effect"
import type { ListenAddress } from "../config/ControlPlaneConfig.js"
import { NodeConfig } from "../config/NodeConfig.js"
import * as ProbeServer from "../layers/operations/ProbeServer.js"
import * as App from "./App.js"
import { Listener, type ListenerInfo } from "./Listener.js"

export interface Bound {
  readonly tcp: Option.Option<ListenAddress>
  readonly socket: Option.Option<string>
  readonly metrics: Option.Option<ListenAddress>
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

export const layer = Layer.scoped(
  LocalApi,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const app = yield* App.make

    const serve = (server: Server, listen: ListenOptions, info: ListenerInfo, what: string) =>
      Effect.gen(function* () {
        const http = yield* NodeHttpServer.make(() => server, listen).pipe(
          Effect.mapError(
            (error: HttpServerError.ServeError) => new ListenError({ reason: `${what}: ${String(error.cause)}` }),
          ),
        )
        yield* http.serve(Effect.provideService(app, Listener, info))
        return http.address
      })

    const tcp = yield* Effect.transposeOption(
      Option.map(settings.bindAddress, (address) =>
        Effect.gen(function* () {
          const tls = Option.getOrUndefined(settings.tls)
          const server =
            tls === undefined
              ? createServer()
              : createTlsServer({
                  cert: readFileSync(tls.certPath),
                  key: readFileSync(tls.keyPath),
                  ...Option.match(tls.caPath, {
                    onNone: () => ({}),
                    onSome: (ca) => ({ ca: readFileSync(ca), requestCert: true, rejectUnauthorized: true }),
                  }),
                })
          const info: ListenerInfo = {
            kind: tls === undefined ? "tcp" : "tls",
            verifiedClient: tls !== undefined && Option.isSome(tls.caPath),
          }
          return tcpOf(
            yield* serve(
              server,
              { host: address.host, port: address.port },
              info,
              `--bind-addr ${address.host}:${address.port}`,
            ),
          )
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
          yield* serve(createServer(), { path }, { kind: "socket", verifiedClient: false }, `--socket-path ${path}`)
          chmodSync(path, 0o600)
          yield* Effect.addFinalizer(() => Effect.sync(() => existsSync(path) && unlinkSync(path)))
          return path
        }),
      ),
    )

    const metrics = yield* Effect.transposeOption(
      Option.map(settings.metricsAddress, (address) =>
        Effect.gen(function* () {
          const probes = yield* ProbeServer.app(Effect.succeed(true))
          const http = yield* NodeHttpServer.make(createServer, { host: address.host, port: address.port }).pipe(
            Effect.mapError((error) => new ListenError({ reason: `--metrics-addr: ${String(error.cause)}` })),
          )
          yield* http.serve(probes)
          return tcpOf(http.address)
        }),
      ),
    )

    return { tcp, socket, metrics }
  }),
)

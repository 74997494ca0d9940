/**
 * The caller side of the proxy: a request to one service on one peer, sent as HTTP/1.1 over a fresh authenticated
 * libp2p stream (`/mesh/proxy/1.0.0`), its response streamed back. The route `/mesh/<peer>/<type>/<name>/<path>`
 * uses it, and so do the MCP gateway (`call_remote_tool`, through an MCP client with `fetch` below) and the
 * inference router. Before anything is sent the peer must be reachable and authenticated, and its credential must
 * attest what the caller and the operator require.
 */
import type { IncomingMessage } from "node:http"
import type { Readable } from "node:stream"
import { Context, type Effect, type Scope } from "effect"
import type { BadGateway, BadRequest, Forbidden } from "../../domain/Errors.js"
import type * as Forwarding from "../../domain/Forwarding.js"
import type { ServiceType } from "../../domain/NodeFile.js"

/** The stream protocol: one HTTP/1.1 request and its response per stream. */
export const PROTOCOL = "/mesh/proxy/1.0.0"

export interface ProxyRequest {
  readonly peerId: string
  readonly type: ServiceType
  readonly name: string
  /** The raw path below the service (`""` or `/...`, never decoded) and the raw query without `?`. */
  readonly path: string
  readonly query: string
  readonly method: string
  /** End-to-end headers to pass on (the API token already removed). */
  readonly headers: Forwarding.Headers
  /** The request body, streamed or at hand; none for a bodiless request. */
  readonly body?: Readable | Uint8Array
  /** `X-Mesh-Required-Labels`: the peer must attest at least one pair. */
  readonly requiredLabels?: Readonly<Record<string, string>>
  /** What the local client's request looked like, passed on as `X-Forwarded-*`. */
  readonly origin?: Forwarding.Origin
}

export type ProxyError = BadRequest | Forbidden | BadGateway

/** What `fetch` takes: the usual `RequestInit`, plus the label requirement. */
export interface FetchInit extends RequestInit {
  readonly requiredLabels?: Readonly<Record<string, string>>
}

export interface PeerProxyService {
  /**
   * Sends the request and completes with the response head; the body streams after. The exchange belongs to the
   * scope: closing it before the response ended resets the stream, which ends the peer's backend request too.
   */
  readonly forward: (request: ProxyRequest) => Effect.Effect<IncomingMessage, ProxyError, Scope.Scope>
  /**
   * The same as a web `fetch`, for callers inside the node (an MCP client's custom fetch, the inference router):
   * `path` is the path below the service, with its query. Aborting `init.signal` or cancelling the body resets the
   * stream.
   */
  readonly fetch: (
    peerId: string,
    type: ServiceType,
    name: string,
    path: string,
    init?: FetchInit,
  ) => Effect.Effect<Response, ProxyError>
}

export class PeerProxy extends Context.Tag("mesh/PeerProxy")<PeerProxy, PeerProxyService>() {}

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
import type { ServiceType } from "../../domain/ServiceType.js"
import type * as Deadlines from "../../platform/Deadlines.js"
import type { Agent } from "../agents/CurrentAgent.js"

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
  /** The request body, streamed, or whole (sent with the head when the length is set); none for a bodiless request. */
  readonly body?: Readable | Uint8Array
  /** `X-Mesh-Required-Labels`: the peer must attest at least one pair. */
  readonly requiredLabels?: Readonly<Record<string, string>>
  /** What the local client's request looked like, passed on as `X-Forwarded-*`. */
  readonly origin?: Forwarding.Origin
  /**
   * The agent the request is made for; else the request's CurrentAgent, if any. Its scope is checked before anything
   * is sent, and its token goes to the peer, which checks it again.
   */
  readonly agent?: Agent
  /**
   * An MCP request without a session, the serving node asked to open one for it (domain/McpOpen): the protocol
   * version this node speaks. The answer then carries `McpOpen.OPENED` if it did.
   */
  readonly openMcpSession?: string
  /** Falls due when the caller stops waiting for the response head: the exchange then fails (and is reset). */
  readonly headDeadline?: Deadlines.Expiry
}

export type ProxyError = BadRequest | Forbidden | BadGateway

/** What `fetch` takes: the usual `RequestInit`, plus the label requirement. */
export interface FetchInit extends RequestInit {
  readonly requiredLabels?: Readonly<Record<string, string>>
  /** As `ProxyRequest.agent`: callers outside the request's fiber (an MCP client's fetch) pass it here. */
  readonly agent?: Agent
  /**
   * Called (with the reason) when the answer outgrew the node's cap on a peer's response and the exchange was
   * reset: a caller that reads the body somewhere that swallows stream errors (an MCP client's event stream) still
   * learns why.
   */
  readonly onTooLarge?: (message: string) => void
  /** As `ProxyRequest.openMcpSession`. */
  readonly openMcpSession?: string
}

export interface PeerProxyService {
  /**
   * Sends the request and completes with the response head; the body streams after. The exchange belongs to the
   * scope: closing it before the response ended resets the stream, which ends the peer's backend request too.
   * A response is read up to the node's cap (`max_response_bytes`, its head included): one that declares a longer
   * body fails with BadGateway, one that streams past it is cut off (the stream reset, the body failing).
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

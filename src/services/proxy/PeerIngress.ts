/**
 * The serving side of the proxy: `/mesh/proxy/1.0.0` streams from authenticated peers, each carrying one HTTP/1.1
 * request for `/<type>/<name>/<path>`. The mesh policy decides (the caller's roles must list the service in
 * `allowed_services` and name this peer in `allowed_targets`; no policy copy, no service); an allowed request goes
 * to the service's `target_url` and its answer streams back. A denial is 403 naming the rule.
 */
import { Context, type Effect } from "effect"

export interface PeerIngressService {
  /** Requests from peers being served right now (announced with the node's services as its load). */
  readonly inFlight: Effect.Effect<number>
  /** 2025-era MCP sessions this node relays for peers to its HTTP MCP backends (each bound to the peer that opened it). */
  readonly mcpSessions: Effect.Effect<number>
}

export class PeerIngress extends Context.Tag("mesh/PeerIngress")<PeerIngress, PeerIngressService>() {}

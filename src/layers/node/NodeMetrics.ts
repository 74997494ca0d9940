/**
 * The node's own gauges (`mesh_node_*`), read from its state when /metrics is scraped: peers connected and
 * authenticated, routers connected, when the credential expires, and the MCP sessions open through it (its agents'
 * on `/mcp`, and the peers' it relays to its backends). Before the node is a member they read zero.
 */
import { Context, Effect, Layer, Option, Runtime } from "effect"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import { McpGateway } from "../../services/mcp/McpGateway.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { NodeLifecycle } from "../../services/node/NodeLifecycle.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { PeerIngress } from "../../services/proxy/PeerIngress.js"

interface Figures {
  readonly connected: number
  readonly authenticated: number
  readonly routers: number
  readonly expiresAtMs: number
  readonly member: boolean
  readonly agentSessions: number
  readonly peerSessions: number
}

const NONE: Figures = {
  connected: 0,
  authenticated: 0,
  routers: 0,
  expiresAtMs: 0,
  member: false,
  agentSessions: 0,
  peerSessions: 0,
}

/** A count from a service of the member's context, zero where it has none. */
const countOf = <I, S>(
  context: Context.Context<never>,
  tag: Context.Tag<I, S>,
  read: (service: S) => Effect.Effect<number>,
) =>
  Option.match(Context.getOption(context as Context.Context<I>, tag), {
    onNone: () => Effect.succeed(0),
    onSome: read,
  })

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const metrics = yield* Metrics
    const lifecycle = yield* NodeLifecycle
    const runSync = Runtime.runSync(yield* Effect.runtime<never>())
    const connected = metrics.gauge("mesh_node_connected_peers", "Peers this node has transport connections to.")
    const authenticated = metrics.gauge("mesh_node_authenticated_peers", "Peers that passed the mesh handshake.")
    const routers = metrics.gauge("mesh_node_routers_connected", "Routers this node is authenticated with.")
    const expiry = metrics.gauge(
      "mesh_node_credential_expiry_timestamp_seconds",
      "When this node's credential expires.",
    )
    const member = metrics.gauge("mesh_node_member", "1 once the node has joined the mesh (has an identity).")
    const mcpSessions = metrics.gauge(
      "mesh_node_mcp_sessions",
      "MCP sessions open: side=agents on this node's /mcp, side=peers relayed for peers to this node's MCP backends.",
    )

    const figures = Effect.flatMap(lifecycle.phase, (phase) => {
      if (phase._tag !== "Member") return Effect.succeed(NONE)
      const host = Context.get(phase.context, MeshHost)
      const membership = Context.get(phase.context, Membership)
      return Effect.map(
        Effect.all([
          host.peers,
          membership.credentialExpiresAt,
          countOf(phase.context, McpGateway, (gateway) => gateway.sessions),
          countOf(phase.context, PeerIngress, (ingress) => ingress.mcpSessions),
        ]),
        ([peers, expiresAtMs, agentSessions, peerSessions]) => ({
          connected: new Set(host.libp2p.getConnections().map((c) => c.remotePeer.toString())).size,
          authenticated: peers.length,
          routers: peers.filter((p) => p.role === ROUTER_ROLE).length,
          expiresAtMs,
          member: true,
          agentSessions,
          peerSessions,
        }),
      )
    })

    metrics.beforeScrape(() => {
      const now = runSync(figures)
      connected.set({}, now.connected)
      authenticated.set({}, now.authenticated)
      routers.set({}, now.routers)
      expiry.set({}, Math.floor(now.expiresAtMs / 1000))
      member.set({}, now.member ? 1 : 0)
      mcpSessions.set({ side: "agents" }, now.agentSessions)
      mcpSessions.set({ side: "peers" }, now.peerSessions)
    })
  }),
)

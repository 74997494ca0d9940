/**
 * What a node runs once it can be a member: membership (key, enrollment, refresh, keys and bans), the mesh host in
 * node mode, links to the routers, the policy view, signed events, the MCP gateway with its sessions with peers' MCP
 * services, the inference router, and its services: probes and publication (DHT records, gossip announcements, the
 * catalog protocol, the catalog report), the stdio MCP servers it runs, discovery and both sides of the proxy. Built
 * by the lifecycle when the node has an identity or a way to get one.
 */
import { readFile } from "node:fs/promises"
import { Effect, Layer, Option, Redacted } from "effect"
import type { NodeSettings } from "../../config/NodeConfig.js"
import { NODE_ROLE } from "../../domain/Policy.js"
import * as FederationScope from "../../services/federation/FederationScope.js"
import * as AgentsLive from "../agents/AgentsLive.js"
import * as AgentTokenFiles from "../agents/AgentTokenFiles.js"
import * as DiscoveryLive from "../discovery/DiscoveryLive.js"
import * as FederationLive from "../federation/FederationLive.js"
import * as InferenceRouterLive from "../inference/InferenceRouterLive.js"
import * as Announcer from "../local/Announcer.js"
import * as CatalogServer from "../local/CatalogServer.js"
import * as LocalServicesLive from "../local/LocalServicesLive.js"
import * as ProviderRecords from "../local/ProviderRecords.js"
import * as OnFirstUse from "../mcp/OnFirstUse.js"
import * as ControlPlaneClientLive from "../member/ControlPlaneClientLive.js"
import * as MembershipLive from "../member/MembershipLive.js"
import * as MeshEventsReceiver from "../member/MeshEventsReceiver.js"
import * as HolePunchLive from "../mesh/HolePunchLive.js"
import * as MeshHostLive from "../mesh/MeshHostLive.js"
import * as RouterLinksLive from "../mesh/RouterLinksLive.js"
import * as PeerIngressLive from "../proxy/PeerIngressLive.js"
import * as PeerProxyLive from "../proxy/PeerProxyLive.js"
import * as DriftReporterLive from "../tooldrift/DriftReporterLive.js"
import * as ToolListingsLive from "../toollistings/ToolListingsLive.js"
import * as ToolPinningLive from "../toolpinning/ToolPinningLive.js"
import * as ToolSearchLive from "../toolsearch/ToolSearchLive.js"
import * as CatalogReport from "./CatalogReport.js"
import * as PolicyViewLive from "./PolicyViewLive.js"

const membership = (settings: NodeSettings) =>
  MembershipLive.layer({
    role: NODE_ROLE,
    labels: settings.file.labels,
    bootstrapToken: settings.bootstrapToken,
    idToken: Option.map(settings.jwtPath, (path) =>
      Effect.tryPromise(() => readFile(path, "utf8")).pipe(Effect.map((text) => Redacted.make(text.trim()))),
    ),
    dataDir: Option.some(settings.dataDir),
    syncInterval: settings.syncInterval,
    jitter: true,
  })

const host = (settings: NodeSettings) =>
  MeshHostLive.fromMembership({
    listen: settings.listen,
    ...(settings.externalAddresses.length > 0 ? { announce: settings.externalAddresses } : {}),
    mode: "node",
  })

/** The services this node publishes, how peers learn of them, and how this node learns of theirs. */
const services = Layer.mergeAll(
  CatalogServer.layer,
  ProviderRecords.layer,
  Announcer.layer,
  CatalogReport.layer,
  DiscoveryLive.layer,
  PeerIngressLive.layer,
).pipe(Layer.provideMerge(LocalServicesLive.layer), Layer.provideMerge(OnFirstUse.stdioServers))

/**
 * The MCP server for local agents, the peers' tools it federates, its sessions with peers' MCP services, the
 * index of their tools and the judge of their definitions (tool pinning, over the policy view); an agent sees only
 * the federated tools its scope covers. The MCP parts are built on first use.
 */
const mcp = OnFirstUse.gateway.pipe(
  Layer.provideMerge(Layer.merge(FederationLive.layer, ToolListingsLive.layer)),
  Layer.provideMerge(
    Layer.mergeAll(OnFirstUse.peerMcp, ToolSearchLive.layer, FederationScope.byAgentScope, ToolPinningLive.layer),
  ),
)

export const layer = (settings: NodeSettings, controlPlaneUrl: string) =>
  Layer.mergeAll(
    MeshEventsReceiver.layer("mesh_node_", Option.some(settings.dataDir)),
    mcp,
    InferenceRouterLive.layer,
  ).pipe(
    // The MCP gateway and the inference router reach peers' services through the proxy, found by discovery.
    Layer.provideMerge(Layer.merge(PeerProxyLive.layer, services)),
    // The policy view decides for the proxy's serving side, among the services.
    Layer.provideMerge(PolicyViewLive.layer),
    // Tool drift the node notices goes to the control plane; ToolPinning, above, finds the reporter here.
    Layer.provideMerge(DriftReporterLive.layer),
    // Agents' tokens are minted and verified from the membership alone; the proxy's serving side verifies them.
    Layer.provideMerge(AgentTokenFiles.layer.pipe(Layer.provideMerge(AgentsLive.layer))),
    Layer.provideMerge(RouterLinksLive.layer({ relaySlots: settings.relaySlots })),
    // Members reached through a relay are upgraded to direct connections where the NATs allow it.
    Layer.provideMerge(HolePunchLive.layer),
    Layer.provideMerge(host(settings)),
    Layer.provideMerge(membership(settings)),
    Layer.provideMerge(ControlPlaneClientLive.layer(controlPlaneUrl)),
  )

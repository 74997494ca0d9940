/**
 * The router assembled: membership (enrollment as `mesh:role:router`, refresh, keys and bans), the mesh host in
 * router mode (relay, DHT server, gossip hub for authenticated peers only), mesh events, the lease, and the probe
 * listener, and links to the other leased routers. Bans learned from /info drop connections too, at each sync.
 */
import { readFile } from "node:fs/promises"
import { Clock, Effect, Layer, Option, Redacted, Runtime, Schedule } from "effect"
import { RouterConfig, type RouterSettings } from "../../config/RouterConfig.js"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import * as RelayMeter from "../../p2p/RelayMeter.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { Metrics } from "../../services/operations/Metrics.js"
import * as ControlPlaneClientLive from "../member/ControlPlaneClientLive.js"
import * as MembershipLive from "../member/MembershipLive.js"
import * as MeshEventsReceiver from "../member/MeshEventsReceiver.js"
import * as MeshHostLive from "../mesh/MeshHostLive.js"
import * as RouterLinksLive from "../mesh/RouterLinksLive.js"
import * as MetricsLive from "../operations/MetricsLive.js"
import * as ProbeServer from "../operations/ProbeServer.js"
import * as LeaseRenewal from "./LeaseRenewal.js"

const membership = (settings: RouterSettings) =>
  MembershipLive.layer({
    role: ROUTER_ROLE,
    labels: {},
    bootstrapToken: settings.bootstrapToken,
    idToken: Option.map(settings.jwtPath, (path) =>
      Effect.tryPromise(() => readFile(path, "utf8")).pipe(Effect.map((text) => Redacted.make(text.trim()))),
    ),
    dataDir: settings.dataDir,
    syncInterval: settings.keysSyncInterval,
  })

const host = (settings: RouterSettings) =>
  MeshHostLive.fromMembership({
    listen: settings.listen,
    ...(settings.externalAddresses.length > 0 ? { announce: settings.externalAddresses } : {}),
    mode: "router",
  })

/** Gauges read at scrape time, and bans learned at sync time enforced on open connections. */
const upkeep = Layer.scopedDiscard(
  Effect.gen(function* () {
    const metrics = yield* Metrics
    const mesh = yield* MeshHost
    const member = yield* Membership
    const config = yield* RouterConfig
    const peers = metrics.gauge("mesh_router_connected_peers", "Authenticated peers connected to this router.")
    const dht = metrics.gauge("mesh_router_dht_size", "Entries in this router's DHT routing table.")
    const expiry = metrics.gauge(
      "mesh_router_credential_expiry_timestamp_seconds",
      "When this router's credential expires.",
    )
    const banned = metrics.gauge("mesh_router_banned_peers", "Peers this router knows to be banned.")
    const relayedBytes = metrics.counter(
      "mesh_router_relayed_bytes_total",
      "Bytes this router relayed between members without a direct path, both directions.",
    )
    const relay = mesh.libp2p.services.relay
    if (relay !== undefined) RelayMeter.install(relay, (bytes) => relayedBytes.inc({}, bytes))
    // The scrape callback runs outside any fiber: it runs its effects on this layer's runtime (its Clock, logger and
    // services), never on the default one.
    const runSync = Runtime.runSync(yield* Effect.runtime<never>())
    metrics.beforeScrape(() => {
      const state = runSync(Effect.all([mesh.peers, member.credentialExpiresAt, member.banned]))
      peers.set({}, state[0].length)
      dht.set({}, LeaseRenewal.dhtSize(mesh))
      expiry.set({}, Math.floor(state[1] / 1000))
      banned.set({}, state[2].size)
    })
    yield* mesh.reverify.pipe(
      Effect.repeat(Schedule.spaced(config.keysSyncInterval)),
      Effect.delay(config.keysSyncInterval),
      Effect.forkScoped,
    )
  }),
)

const probes = (settings: RouterSettings) =>
  Option.match(settings.metricsAddress, {
    onNone: () => Layer.empty,
    onSome: (address) =>
      Layer.unwrapEffect(
        Effect.gen(function* () {
          const member = yield* Membership
          const ready = Effect.zipWith(
            member.credentialExpiresAt,
            Clock.currentTimeMillis,
            (expires, now) => expires > now,
          )
          return ProbeServer.layer(address, ready)
        }),
      ),
  })

export const layer = (settings: RouterSettings) =>
  Layer.mergeAll(
    LeaseRenewal.layer,
    // Routers link to each other: one DHT and one gossip mesh however the nodes are spread over them.
    RouterLinksLive.layer({ relaySlots: 0 }),
    MeshEventsReceiver.layer("mesh_router_", settings.dataDir),
    upkeep,
    probes(settings),
  ).pipe(
    Layer.provideMerge(host(settings)),
    Layer.provideMerge(membership(settings)),
    Layer.provideMerge(ControlPlaneClientLive.layer(settings.controlPlaneUrl)),
    Layer.provideMerge(MetricsLive.layer),
    Layer.provideMerge(Layer.succeed(RouterConfig, settings)),
  )

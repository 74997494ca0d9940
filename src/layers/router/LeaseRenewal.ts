/**
 * The router's lease: renewed at start and every `--lease-renew-interval` with the router's addresses (each ending
 * in its own peer id) and telemetry (authenticated peers, DHT size), so /info lists it while it is alive. The
 * telemetry measured at start is nearly always 0 peers: the figures are checked every FIGURES_CHECK, and a change
 * renews the lease then, so the console shows the mesh as it is, measured (renewed) at most that long ago.
 */
import { Duration, Effect, Layer, Ref, Schedule } from "effect"
import { RouterConfig } from "../../config/RouterConfig.js"
import { ControlPlaneClient } from "../../services/member/ControlPlaneClient.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost, type MeshHostService } from "../../services/mesh/MeshHost.js"
import { Metrics } from "../../services/operations/Metrics.js"

/** Routing-table size; kad-dht keeps it on an object its typings do not export. */
export const dhtSize = (host: MeshHostService): number => {
  const table = (host.libp2p.services.dht as unknown as { routingTable?: { size?: unknown } }).routingTable
  return typeof table?.size === "number" ? table.size : 0
}

export const announced = (host: MeshHostService, external: ReadonlyArray<string>) =>
  Effect.map(host.addresses, (own) =>
    external.length > 0
      ? external.map((a) => (a.includes("/p2p/") ? a : `${a}/p2p/${host.peerId}`))
      : own.filter((a) => !a.includes("/p2p-circuit")),
  )

/** How often the router compares its peers and DHT size with what it last reported. */
export const FIGURES_CHECK = Duration.seconds(10)

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* RouterConfig
    const client = yield* ControlPlaneClient
    const membership = yield* Membership
    const host = yield* MeshHost
    const metrics = yield* Metrics
    const renewals = metrics.counter("mesh_router_lease_renewals_total", "Lease renewals, by outcome.")

    /** The figures last reported, as `peers/dht size`. */
    const reported = yield* Ref.make("")
    const figures = Effect.map(host.peers, (peers) => ({ peers, dht: dhtSize(host) }))
    const key = (f: Effect.Effect.Success<typeof figures>) => `${f.peers.length}/${f.dht}`

    const renew = Effect.gen(function* () {
      const measured = yield* figures
      // Recorded before the call: a control plane that is down is retried on the renewal schedule, not every check.
      yield* Ref.set(reported, key(measured))
      yield* client.lease(membership.signer, yield* membership.credential, {
        addresses: yield* announced(host, config.externalAddresses),
        connectedPeers: measured.peers.map((p) => p.peerId),
        dhtSize: measured.dht,
      })
      renewals.inc({ outcome: "ok" })
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.sync(() => renewals.inc({ outcome: "failed" })),
          Effect.logWarning("lease renewal failed", cause),
        ),
      ),
    )
    yield* renew.pipe(Effect.repeat(Schedule.spaced(config.leaseRenewInterval)), Effect.forkScoped)
    const renewIfChanged = Effect.gen(function* () {
      if (key(yield* figures) !== (yield* Ref.get(reported))) yield* renew
    })
    yield* renewIfChanged.pipe(
      Effect.repeat(Schedule.spaced(FIGURES_CHECK)),
      Effect.delay(FIGURES_CHECK),
      Effect.forkScoped,
    )
  }),
)

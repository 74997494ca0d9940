/**
 * The router's lease: renewed at start and every `--lease-renew-interval` with the router's addresses (each ending
 * in its own peer id) and telemetry (authenticated peers, DHT size), so /info lists it while it is alive.
 */
import { Effect, Layer, Schedule } from "effect"
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

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* RouterConfig
    const client = yield* ControlPlaneClient
    const membership = yield* Membership
    const host = yield* MeshHost
    const metrics = yield* Metrics
    const renewals = metrics.counter("mesh_router_lease_renewals_total", "Lease renewals, by outcome.")

    const renew = Effect.gen(function* () {
      const peers = yield* host.peers
      yield* client.lease(membership.signer, yield* membership.credential, {
        addresses: yield* announced(host, config.externalAddresses),
        connectedPeers: peers.map((p) => p.peerId),
        dhtSize: dhtSize(host),
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
  }),
)

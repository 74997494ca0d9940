/**
 * Discovery over the DHT and provider catalogs, plus the gossip view. A search asks the DHT for the providers of
 * the type's key (or the type+name key), and as each provider comes in, reaches it (at most CONCURRENCY at once)
 * and asks its catalog; each service it lists is a result, labelled with what its credential attests. The search
 * ends when the DHT query and every catalog request are done, or at the caller's timeout.
 */
import type { PeerInfo } from "@libp2p/interface"
import { Effect, Layer, Stream } from "effect"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import { type DiscoveredService, Discovery, type DiscoveryQuery } from "../../services/discovery/Discovery.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import * as CatalogClient from "./CatalogClient.js"
import * as GossipView from "./GossipView.js"

/** Providers asked at once. */
const CONCURRENCY = 10

const describe = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").trim().slice(0, 200)

export const layer = Layer.scoped(
  Discovery,
  Effect.gen(function* () {
    const host = yield* MeshHost
    const membership = yield* Membership
    const gossip = yield* GossipView.make

    /** Provider peer ids from the DHT, as the query finds them; a failed query ends the stream quietly. */
    const providers = (query: DiscoveryQuery): Stream.Stream<string> =>
      Stream.unwrapScoped(
        Effect.map(
          Effect.acquireRelease(
            Effect.sync(() => new AbortController()),
            (controller) => Effect.sync(() => controller.abort()),
          ),
          (controller) =>
            Stream.fromAsyncIterable(
              host.libp2p.contentRouting.findProviders(ServiceKeys.cid(query.type, query.name), {
                signal: controller.signal,
              }),
              describe,
            ),
        ),
      ).pipe(
        Stream.map((info: PeerInfo) => info.id.toString()),
        Stream.catchAll((reason) =>
          Stream.fromEffect(Effect.logDebug("DHT provider search failed").pipe(Effect.annotateLogs({ reason }))).pipe(
            Stream.drain,
          ),
        ),
      )

    /** One provider's matching services; an unreachable or unhelpful provider yields none. */
    const enrich = (peerId: string, query: DiscoveryQuery): Effect.Effect<ReadonlyArray<DiscoveredService>> =>
      Effect.gen(function* () {
        const peer = yield* CatalogClient.reach(host, peerId)
        const services = yield* CatalogClient.ask(host, peerId, query.type, query.name)
        return services.map((s) => ({ peerId, ...s, labels: peer.labels }))
      }).pipe(
        Effect.catchAll((reason) =>
          Effect.as(
            Effect.logDebug("provider left out of discovery").pipe(Effect.annotateLogs({ peer: peerId, reason })),
            [],
          ),
        ),
      )

    const find = (query: DiscoveryQuery): Stream.Stream<DiscoveredService> =>
      providers(query).pipe(
        Stream.filter((peerId) => peerId !== host.peerId),
        Stream.filterEffect((peerId) => Effect.map(membership.banned, (banned) => !banned.has(peerId))),
        Stream.mapEffect((peerId) => enrich(peerId, query), { concurrency: CONCURRENCY, unordered: true }),
        Stream.flattenIterables,
        Stream.interruptAfter(query.timeout),
      )

    return Discovery.of({ find, announcers: gossip.announcers })
  }),
)

/**
 * Discovery over the DHT and provider catalogs, plus the gossip view. A search asks the DHT for the providers of
 * the type's key (or the type+name key), every router the node is linked to being a DHT server, and, for a search by
 * name, takes the peers that announced the service on gossip lately too (either source alone survives the loss of the other: a
 * restarted router has no provider records until its members place them again). As each provider comes in, it is
 * reached (at most CONCURRENCY at once) and its catalog asked; each service it lists is a result, labelled with what
 * its credential attests. The search ends when the DHT query and every catalog request are done, or at the caller's
 * timeout.
 */
import type { PeerInfo } from "@libp2p/interface"
import { Duration, Effect, Either, Layer, Ref, Stream } from "effect"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import { describe } from "../../platform/Describe.js"
import {
  type DiscoveredService,
  Discovery,
  type DiscoveryQuery,
  type ProviderAnswer,
} from "../../services/discovery/Discovery.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import * as CatalogClient from "./CatalogClient.js"
import * as GossipView from "./GossipView.js"

/** Providers asked at once. */
const CONCURRENCY = 10
const CONNECT_TIMEOUT = Duration.seconds(10)

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

    /** One provider's matching services, or why it could not be asked. */
    const enrich = (peerId: string, query: DiscoveryQuery): Effect.Effect<ProviderAnswer> =>
      Effect.gen(function* () {
        const peer = yield* CatalogClient.reach(host, peerId)
        const services = yield* CatalogClient.ask(host, peerId, query.type, query.name)
        return services.map((s): DiscoveredService => ({ peerId, ...s, labels: peer.labels }))
      }).pipe(
        Effect.tapError((reason) =>
          Effect.logDebug("provider could not be asked").pipe(Effect.annotateLogs({ peer: peerId, reason })),
        ),
        Effect.either,
        Effect.map((services) => ({ peerId, services })),
      )

    /** Providers from both sources, each once: the gossip view answers at once, the DHT as its query walks. */
    const sources = (query: DiscoveryQuery): Stream.Stream<string> =>
      Stream.unwrap(
        Effect.map(Ref.make<ReadonlySet<string>>(new Set()), (seen) =>
          Stream.merge(
            // A search by type alone asks the DHT only: hearing every service of a type would not scale.
            query.name === undefined
              ? Stream.empty
              : Stream.fromIterableEffect(gossip.providers(query.type, query.name)),
            providers(query),
          ).pipe(
            Stream.filterEffect((peerId) =>
              Ref.modify(seen, (set) => (set.has(peerId) ? [false, set] : [true, new Set(set).add(peerId)])),
            ),
          ),
        ),
      )

    const answers = (query: DiscoveryQuery): Stream.Stream<ProviderAnswer> =>
      sources(query).pipe(
        Stream.filter((peerId) => peerId !== host.peerId),
        Stream.filterEffect((peerId) => Effect.map(membership.banned, (banned) => !banned.has(peerId))),
        Stream.mapEffect((peerId) => enrich(peerId, query), { concurrency: CONCURRENCY, unordered: true }),
        Stream.interruptAfter(query.timeout),
      )

    /** Unreachable or unhelpful providers are left out. */
    const find = (query: DiscoveryQuery): Stream.Stream<DiscoveredService> =>
      answers(query).pipe(
        Stream.map((answer) => Either.getOrElse(answer.services, () => [])),
        Stream.flattenIterables,
      )

    const catalogOf = (peerId: string, type: DiscoveryQuery["type"], name?: string) =>
      Effect.gen(function* () {
        if ((yield* membership.banned).has(peerId)) return yield* Effect.fail("the peer is banned")
        const peer = yield* host.connect(peerId).pipe(
          Effect.mapError((error) => error.reason),
          Effect.timeoutFail({ duration: CONNECT_TIMEOUT, onTimeout: () => "no connection within 10s" }),
        )
        const services = yield* CatalogClient.ask(host, peerId, type, name)
        return services.map((s): DiscoveredService => ({ peerId, ...s, labels: peer.labels }))
      })

    return Discovery.of({
      find,
      providers: answers,
      catalogOf,
      announcers: gossip.announcers,
      serviceAnnouncers: gossip.serviceAnnouncers,
    })
  }),
)

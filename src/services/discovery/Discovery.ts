/**
 * Finding services on other peers. `find` asks the DHT for the providers of a type (or of one named service), then
 * each provider's own catalog over an authenticated stream; the labels of a result are those the provider's
 * credential attests, as verified in the handshake. This node, banned peers and peers that cannot be reached are
 * left out. `announcers` is the fast path from gossip: who announced a key (a tool name, a model id) in the last
 * 30 seconds, with their labels and load — a hint for ranking, never authorization; `serviceAnnouncers` the same for
 * a service by name.
 */
import { Context, type Duration, type Effect, type Either, type Stream } from "effect"
import type { ServiceType } from "../../domain/ServiceType.js"

export interface DiscoveredService {
  readonly peerId: string
  readonly type: ServiceType
  readonly name: string
  readonly description: string
  /** Attested by the provider's credential. */
  readonly labels: Readonly<Record<string, string>>
}

export interface DiscoveryQuery {
  readonly type: ServiceType
  /** Only providers of this service name; every service of the type when absent. */
  readonly name?: string
  /** The whole search ends by then; what was found so far stands. */
  readonly timeout: Duration.DurationInput
}

export interface Announcer {
  readonly peerId: string
  readonly type: ServiceType
  readonly service: string
  /** Every key the announcement listed (sorted tool names, model ids). */
  readonly keys: ReadonlyArray<string>
  /**
   * The provider's labels: as its credential attests them when this node has authenticated it (`labelsAttested`),
   * else as the announcement claims them.
   */
  readonly labels: Readonly<Record<string, string>>
  readonly labelsAttested: boolean
  /** Requests the provider had in flight for this service when it announced. */
  readonly activeRequests: number
  readonly receivedAtMs: number
}

/** One provider the DHT named: its matching services, or why it could not be asked (unreachable, no answer). */
export interface ProviderAnswer {
  readonly peerId: string
  readonly services: Either.Either<ReadonlyArray<DiscoveredService>, string>
}

export interface DiscoveryService {
  /** Results as they are found; the stream ends when every provider answered or failed, or at the timeout. */
  readonly find: (query: DiscoveryQuery) => Stream.Stream<DiscoveredService>
  /** The same search, one answer per provider, those that could not be asked included. */
  readonly providers: (query: DiscoveryQuery) => Stream.Stream<ProviderAnswer>
  /** One peer's published services of a type (and name), reaching the peer first; fails with a short reason. */
  readonly catalogOf: (
    peerId: string,
    type: ServiceType,
    name?: string,
  ) => Effect.Effect<ReadonlyArray<DiscoveredService>, string>
  /**
   * Fresh announcers of `key` (newest first). The first call for a key starts listening to its topic, so it usually
   * finds nothing yet; listening continues for a few minutes after the last call.
   */
  readonly announcers: (type: ServiceType, key: string) => Effect.Effect<ReadonlyArray<Announcer>>
  /**
   * Fresh announcers of the named service, one per peer (newest first), each with every key it announced: what
   * federation watches to see a provider's tools change. Listens to the service's topic, as `announcers` to a key's.
   */
  readonly serviceAnnouncers: (type: ServiceType, name: string) => Effect.Effect<ReadonlyArray<Announcer>>
}

export class Discovery extends Context.Tag("mesh/Discovery")<Discovery, DiscoveryService>() {}

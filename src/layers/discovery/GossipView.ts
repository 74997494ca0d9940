/**
 * The gossip side of discovery: listening to the topics of the keys someone asked about, and the table of what was
 * heard. A key's topic is joined on first use and left INTEREST_MS after the last (at most MAX_TOPICS at once, the
 * least recently used left first). Announcements from this node, from banned peers, that do not decode, that name
 * another peer than their signer or that are more than two minutes off our clock are dropped.
 */
import { Clock, Duration, Effect, Either, FiberMap, Option, Ref, Schedule, type Scope, Stream } from "effect"
import * as ServiceAnnouncement from "../../domain/ServiceAnnouncement.js"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import type { ServiceType } from "../../domain/ServiceType.js"
import type { Announcer } from "../../services/discovery/Discovery.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import * as AnnouncementTable from "./AnnouncementTable.js"

export const INTEREST_MS = 5 * 60_000
const MAX_TOPICS = 256
const JANITOR_EVERY = Duration.seconds(75)

export interface GossipView {
  readonly announcers: (type: ServiceType, key: string) => Effect.Effect<ReadonlyArray<Announcer>>
  /** Peers that announced the named service lately, newest first; starts listening to its topic. */
  readonly providers: (type: ServiceType, name: string) => Effect.Effect<ReadonlyArray<string>>
  /** Their announcements of it, one per peer, newest first; starts listening to its topic. */
  readonly serviceAnnouncers: (type: ServiceType, name: string) => Effect.Effect<ReadonlyArray<Announcer>>
}

export const make: Effect.Effect<GossipView, never, Scope.Scope | MeshHost | Membership> = Effect.gen(function* () {
  const host = yield* MeshHost
  const membership = yield* Membership
  const table = yield* Ref.make(AnnouncementTable.empty)
  /** Topic → when a lookup last needed it. */
  const interest = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
  const listeners = yield* FiberMap.make<string>()

  const receive = (from: string, data: Uint8Array) =>
    Effect.gen(function* () {
      if (from === host.peerId || (yield* membership.banned).has(from)) return
      const now = yield* Clock.currentTimeMillis
      const decoded = ServiceAnnouncement.decode(data, from, now)
      if (Either.isLeft(decoded)) {
        return yield* Effect.logDebug("service announcement dropped").pipe(
          Effect.annotateLogs({ peer: from, reason: decoded.left }),
        )
      }
      yield* Ref.update(table, (t) => AnnouncementTable.insert(t, decoded.right, now))
    })

  const listen = (topic: string) =>
    host.subscribe(topic).pipe(Stream.runForEach((message) => receive(message.from, message.data)))

  const stopListening = (topics: ReadonlyArray<string>) =>
    Effect.forEach(topics, (topic) => FiberMap.remove(listeners, topic), { discard: true }).pipe(
      Effect.zipRight(Ref.update(interest, (map) => new Map([...map].filter(([topic]) => !topics.includes(topic))))),
    )

  const ensure = (topic: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const known = yield* Ref.get(interest)
      if (!known.has(topic) && known.size >= MAX_TOPICS) {
        const idlest = [...known].sort((a, b) => a[1] - b[1])[0]
        if (idlest !== undefined) yield* stopListening([idlest[0]])
      }
      yield* Ref.update(interest, (map) => new Map(map).set(topic, now))
      yield* FiberMap.run(listeners, topic, listen(topic), { onlyIfMissing: true })
    })

  const janitor = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    yield* Ref.update(table, (t) => AnnouncementTable.prune(t, now))
    const idle = [...(yield* Ref.get(interest))].filter(([, at]) => now - at > INTEREST_MS).map(([topic]) => topic)
    yield* stopListening(idle)
  })
  yield* janitor.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("gossip view cleanup failed", cause)),
    Effect.repeat(Schedule.spaced(JANITOR_EVERY)),
    Effect.forkScoped,
  )

  /** The entries, banned peers left out, each with the labels its credential attests once we have authenticated it. */
  const asAnnouncers = (entries: ReadonlyArray<AnnouncementTable.Entry>) =>
    Effect.gen(function* () {
      const banned = yield* membership.banned
      return yield* Effect.forEach(
        entries.filter((e) => !banned.has(e.peerId)),
        (e) =>
          Effect.map(
            host.peer(e.peerId),
            (peer): Announcer => ({
              peerId: e.peerId,
              type: e.type,
              service: e.service,
              keys: e.keys,
              labels: Option.match(peer, { onNone: () => e.labels, onSome: (p) => p.labels }),
              labelsAttested: Option.isSome(peer),
              activeRequests: e.activeRequests,
              receivedAtMs: e.receivedAtMs,
            }),
          ),
      )
    })

  const announcers = (type: ServiceType, key: string) =>
    Effect.gen(function* () {
      yield* ensure(ServiceKeys.topic(type, key))
      const now = yield* Clock.currentTimeMillis
      return yield* asAnnouncers(AnnouncementTable.fresh(yield* Ref.get(table), type, key, now))
    })

  const providers = (type: ServiceType, name: string) =>
    Effect.gen(function* () {
      yield* ensure(ServiceKeys.serviceTopic(type, name))
      const now = yield* Clock.currentTimeMillis
      const banned = yield* membership.banned
      const entries = AnnouncementTable.ofService(yield* Ref.get(table), type, name, now)
      return [...new Set(entries.map((e) => e.peerId))].filter((peer) => !banned.has(peer))
    })

  const serviceAnnouncers = (type: ServiceType, name: string) =>
    Effect.gen(function* () {
      yield* ensure(ServiceKeys.serviceTopic(type, name))
      const now = yield* Clock.currentTimeMillis
      return yield* asAnnouncers(AnnouncementTable.ofService(yield* Ref.get(table), type, name, now))
    })

  return { announcers, providers, serviceAnnouncers }
})

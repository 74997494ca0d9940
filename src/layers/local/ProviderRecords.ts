/**
 * DHT provider records for the published services: two keys per service, its type and its type+name
 * (ServiceKeys.cid), provided to the routers (the DHT servers) as soon as the service is published and a router is
 * connected, again every REFRESH — well within the routers' record validity (Libp2pHost.PROVIDER_VALIDITY_MS) — and
 * all of them at once whenever a router link comes up: a router keeps provider records in memory only, so one that
 * restarted has none, and one linked later never got them. A placement counts only when every linked router (up to
 * the DHT's K) took it. One that some router missed is retried after 1 s, doubling up to 5 s; one no router took, up
 * to a minute. Keys no published service needs any more are no longer refreshed, so the routers drop them when
 * they expire.
 */

import type { PeerId } from "@libp2p/interface"
import { peerIdFromString } from "@libp2p/peer-id"
import { Clock, Duration, Effect, Layer, Queue, Ref, Stream } from "effect"
import type { CID } from "multiformats/cid"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import { describe } from "../../platform/Describe.js"
import { LocalServices } from "../../services/local/LocalServices.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { RouterLinks } from "../../services/mesh/RouterLinks.js"

export const REFRESH = Duration.minutes(5)
const PROVIDE_TIMEOUT = Duration.seconds(30)
const FIRST_RETRY_MS = 1_000
const MAX_RETRY_MS = 60_000
const MAX_PARTIAL_RETRY_MS = 5_000
const ROUTING_TABLE_WAIT = Duration.seconds(5)
const TICK = Duration.seconds(1)
const CONCURRENCY = 4
/** kad-dht's K: a record goes to at most this many of the closest servers. */
const DHT_K = 20

interface ProviderRecord {
  readonly cid: CID
  readonly failures: number
  readonly nextAtMs: number
}

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const host = yield* MeshHost
    const local = yield* LocalServices
    const links = yield* RouterLinks
    const dht = host.libp2p.services.dht
    const records = yield* Ref.make<ReadonlyMap<string, ProviderRecord>>(new Map())
    /** A router link came up since the last tick: every record is placed again. */
    const placeAll = yield* Ref.make(false)
    const wakeups = yield* Effect.acquireRelease(Queue.sliding<void>(1), Queue.shutdown)
    // kad-dht adds a peer to its routing table on its own schedule (a ping first); a router that just came back may
    // be missing from it for a while, and records placed meanwhile would skip it. It is added before placing.
    const table = (dht as unknown as { routingTable?: { add?: (peer: PeerId) => Promise<void> } }).routingTable
    const intoTable = (peer: string) =>
      Effect.tryPromise(() => table?.add?.(peerIdFromString(peer)) ?? Promise.resolve()).pipe(
        Effect.timeout(ROUTING_TABLE_WAIT),
        Effect.ignore,
      )
    yield* links.linkUps.pipe(
      Stream.runForEach((peer) =>
        intoTable(peer).pipe(
          Effect.zipRight(Ref.set(placeAll, true)),
          Effect.zipRight(Queue.offer(wakeups, undefined)),
        ),
      ),
      Effect.forkScoped,
    )

    /**
     * Sends the record to the closest DHT servers; fails unless every router we are linked to took it (past the DHT's
     * K routers, K of them): every router should hold it. A linked router that did not take it is put into the DHT's
     * routing table again before the retry: kad's query starts from that table, and a router missing from it is
     * reached only if another router names it among the peers closer to the key.
     */
    const provide = (cid: CID) =>
      Effect.gen(function* () {
        const linked = (yield* links.links).filter((l) => l.connected).map((l) => l.peerId)
        const took = yield* Effect.tryPromise({
          try: async (signal) => {
            const peers = new Set<string>()
            for await (const event of dht.provide(cid, { signal })) {
              if (event.name === "PEER_RESPONSE" && event.messageName === "ADD_PROVIDER") {
                peers.add(event.from.toString())
              }
            }
            return peers
          },
          catch: (error) => ({ reason: describe(error), partial: false }),
        }).pipe(
          Effect.timeoutFail({
            duration: PROVIDE_TIMEOUT,
            onTimeout: () => ({ reason: "provide timed out", partial: false }),
          }),
        )
        const missed = linked.filter((peer) => !took.has(peer))
        const enough = linked.length > DHT_K ? took.size >= DHT_K : missed.length === 0
        if (took.size === 0 || !enough) {
          yield* Effect.forEach(missed, intoTable, { discard: true })
          return yield* Effect.fail({
            reason: `${missed.length} of ${linked.length} linked routers did not take the record`,
            partial: took.size > 0,
          })
        }
      })

    const settle = (key: string, record: ProviderRecord, now: number) =>
      provide(record.cid).pipe(
        Effect.as({ ...record, failures: 0, nextAtMs: now + Duration.toMillis(REFRESH) }),
        Effect.catchAll(({ reason, partial }) => {
          const failures = record.failures + 1
          // A router that lacks the record is a hole in discovery: retried soon. None reachable: backed off longer.
          const retryMs = Math.min(partial ? MAX_PARTIAL_RETRY_MS : MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (failures - 1))
          // One miss is routine (a router just went or came); a record that keeps missing is a hole in discovery.
          const log = failures >= 3 ? Effect.logWarning : Effect.logDebug
          return Effect.as(
            log("provider record not placed").pipe(
              Effect.annotateLogs({ key, reason, retry_in_ms: retryMs, failures }),
            ),
            { ...record, failures, nextAtMs: now + retryMs },
          )
        }),
        Effect.map((next) => [key, next] as const),
      )

    const tick = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const connected = yield* links.connected
      const again = connected && (yield* Ref.getAndSet(placeAll, false))
      const wanted = new Map<string, CID>()
      for (const service of yield* local.published) {
        wanted.set(ServiceKeys.dhtKeyText(service.type), ServiceKeys.cid(service.type))
        wanted.set(ServiceKeys.dhtKeyText(service.type, service.name), ServiceKeys.cid(service.type, service.name))
      }
      const previous = yield* Ref.get(records)
      for (const [key, record] of previous) {
        if (!wanted.has(key)) {
          // Also stops libp2p's own reprovider from announcing it again.
          yield* Effect.tryPromise(() => dht.cancelReprovide(record.cid)).pipe(Effect.ignore)
        }
      }
      const current = new Map<string, ProviderRecord>()
      for (const [key, cid] of wanted) {
        const known = previous.get(key)
        current.set(key, known === undefined || again ? { cid, failures: 0, nextAtMs: now } : known)
      }
      if (!connected) return yield* Ref.set(records, current)
      const due = [...current].filter(([, record]) => record.nextAtMs <= now)
      const settled = yield* Effect.forEach(due, ([key, record]) => settle(key, record, now), {
        concurrency: CONCURRENCY,
      })
      for (const [key, record] of settled) current.set(key, record)
      yield* Ref.set(records, current)
      if (again) {
        const missed = settled.filter(([, record]) => record.failures > 0).length
        yield* Effect.logInfo("provider records placed again after a router link came up").pipe(
          Effect.annotateLogs({ placed: settled.length - missed, missed }),
        )
      }
    })

    yield* tick.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("provider records not refreshed", cause)),
      Effect.zipRight(Effect.raceFirst(Queue.take(wakeups), Effect.sleep(TICK))),
      Effect.forever,
      Effect.forkScoped,
    )
  }),
)

/**
 * The models the mesh's other peers serve: every inference provider discovery finds (DHT + catalogs) is asked for
 * `GET /v1/models` through the proxy, at most CONCURRENCY at once and each within LIST_TIMEOUT; a provider that does
 * not answer, or answers anything but a model list, is left out. A view is kept TTL; an empty one only when the
 * listing has models of this node's own (an empty listing is what a node sees before its peers are discoverable, and
 * is looked for again at the next call). Callers at the same time share one fetch.
 */
import type { IncomingMessage } from "node:http"
import { Clock, Duration, Effect, Either, Ref, Schema, type Scope, Stream } from "effect"
import { MAX_KEY_LENGTH } from "../../domain/ServiceKeys.js"
import { type DiscoveredService, Discovery } from "../../services/discovery/Discovery.js"
import { PeerProxy } from "../../services/proxy/PeerProxy.js"
import * as Body from "./Body.js"

export const TTL = Duration.seconds(30)
const FIND_TIMEOUT = Duration.seconds(5)
const LIST_TIMEOUT = Duration.seconds(5)
const CONCURRENCY = 10
const MAX_LIST_BYTES = 1024 * 1024
/** Models kept per provider (as for this node's own, Probes.MAX_KEYS). */
const MAX_MODELS = 1024
/** Providers whose own list is kept for `lists`; past it the kept lists start over. */
const MAX_PROVIDERS = 1024

/** One model one remote provider serves. */
export interface RemoteModel {
  readonly id: string
  readonly peerId: string
  readonly service: string
  /** As the provider's credential attested them when discovery reached it. */
  readonly labels: Readonly<Record<string, string>>
}

export interface ModelRegistry {
  /**
   * A view fetched at most TTL ago; fetched now when the kept one is older, or empty and `keepEmpty` is false (an
   * empty view is kept only when the caller has models of its own to show: the whole listing is not empty).
   */
  readonly fresh: (keepEmpty: boolean) => Effect.Effect<ReadonlyArray<RemoteModel>>
  /** The kept view whatever its age, fetched again in the background once past TTL; fetched now when none is kept. */
  readonly kept: Effect.Effect<ReadonlyArray<RemoteModel>>
  /** A view whose fetch ended at `sinceMs` or later (empty or not): the one just fetched, or a new one. */
  readonly refresh: (sinceMs: number) => Effect.Effect<ReadonlyArray<RemoteModel>>
  /**
   * Whether one provider's own model list (read from it, kept TTL) holds `model`: a gossip announcement is the
   * announcer's word, and a provider is not tried for a model it does not list itself.
   */
  readonly lists: (peerId: string, service: string, model: string) => Effect.Effect<boolean>
}

const ModelList = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })
const decodeList = Schema.decodeUnknownEither(Schema.parseJson(ModelList))

interface Fetched {
  readonly models: ReadonlyArray<RemoteModel>
  readonly startedMs: number
  readonly endedMs: number
}

export const make: Effect.Effect<ModelRegistry, never, Scope.Scope | Discovery | PeerProxy> = Effect.gen(function* () {
  const discovery = yield* Discovery
  const proxy = yield* PeerProxy
  const scope = yield* Effect.scope
  const last = yield* Ref.make<Fetched | undefined>(undefined)
  const lock = yield* Effect.makeSemaphore(1)
  const ttlMs = Duration.toMillis(TTL)

  /** One provider's model ids; none when it does not answer with a model list. */
  const modelsOf = (service: DiscoveredService): Effect.Effect<ReadonlyArray<RemoteModel>> =>
    Effect.scoped(
      Effect.gen(function* () {
        const response: IncomingMessage = yield* proxy.forward({
          peerId: service.peerId,
          type: "inference",
          name: service.name,
          path: "/v1/models",
          query: "",
          method: "GET",
          headers: { accept: "application/json" },
        })
        if (response.statusCode !== 200) return []
        const text = (yield* Body.read(response, MAX_LIST_BYTES)).toString("utf8")
        const list = decodeList(text)
        if (Either.isLeft(list)) return []
        const ids = [...new Set(list.right.data.map((m) => m.id))].filter(
          (id) => id.length > 0 && id.length <= MAX_KEY_LENGTH,
        )
        return ids
          .slice(0, MAX_MODELS)
          .map((id) => ({ id, peerId: service.peerId, service: service.name, labels: service.labels }))
      }),
    ).pipe(
      Effect.timeoutFail({ duration: LIST_TIMEOUT, onTimeout: () => "no model list within the timeout" }),
      Effect.catchAll((reason) =>
        Effect.as(
          Effect.logDebug("inference provider left out of the model list").pipe(
            Effect.annotateLogs({
              peer: service.peerId,
              service: service.name,
              reason: typeof reason === "string" ? reason : reason._tag,
            }),
          ),
          [],
        ),
      ),
    )

  const fetch = discovery.find({ type: "inference", timeout: FIND_TIMEOUT }).pipe(
    Stream.mapEffect(modelsOf, { concurrency: CONCURRENCY, unordered: true }),
    Stream.flattenIterables,
    Stream.runCollect,
    Effect.map((chunk) => [...chunk]),
  )

  const fetchNow = Effect.gen(function* () {
    const startedMs = yield* Clock.currentTimeMillis
    const models = yield* fetch
    const fetched = { models, startedMs, endedMs: yield* Clock.currentTimeMillis }
    yield* Ref.set(last, fetched)
    return fetched
  })

  /** The last view if its fetch ended at `sinceMs` or later, else a new one; one fetch at a time. */
  const load = (sinceMs: number) =>
    lock.withPermits(1)(
      Effect.flatMap(Ref.get(last), (current) =>
        current !== undefined && current.endedMs >= sinceMs
          ? Effect.succeed(current.models)
          : Effect.map(fetchNow, (f) => f.models),
      ),
    )

  /** The last view when it is worth keeping (not empty, unless told) and `now - startedMs` is within TTL. */
  const young = (current: Fetched | undefined, now: number, keepEmpty = false) =>
    current !== undefined && (current.models.length > 0 || keepEmpty) && now - current.startedMs < ttlMs

  const fresh = (keepEmpty: boolean) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.flatMap(Ref.get(last), (current) =>
        young(current, now, keepEmpty) ? Effect.succeed(current?.models ?? []) : load(now),
      ),
    )

  const kept = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.flatMap(Ref.get(last), (current) => {
      if (current === undefined || current.models.length === 0) return load(now)
      if (young(current, now)) return Effect.succeed(current.models)
      // Old: answer with it now and fetch again, unless a fetch is already under way.
      return Effect.as(Effect.forkIn(lock.withPermitsIfAvailable(1)(fetchNow), scope), current.models)
    }),
  )

  const single = yield* Ref.make<ReadonlyMap<string, { readonly atMs: number; readonly ids: ReadonlySet<string> }>>(
    new Map(),
  )
  const lists = (peerId: string, service: string, model: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const view = yield* Ref.get(last)
      if (view?.models.some((m) => m.peerId === peerId && m.service === service && m.id === model)) return true
      const key = `${peerId}/${service}`
      const hit = (yield* Ref.get(single)).get(key)
      if (hit !== undefined && now - hit.atMs < ttlMs) return hit.ids.has(model)
      const models = yield* modelsOf({ peerId, type: "inference", name: service, description: "", labels: {} })
      const ids = new Set(models.map((m) => m.id))
      yield* Ref.update(single, (map) =>
        (map.size >= MAX_PROVIDERS ? new Map() : new Map(map)).set(key, { atMs: now, ids }),
      )
      return ids.has(model)
    })

  return { fresh, kept, refresh: load, lists } satisfies ModelRegistry
})

/**
 * LocalServices: one fiber per configured service probes its backend. A service that does not answer is withheld and
 * probed again after 5 s, doubling up to 5 min; once it answers it is published, and probed again every minute so
 * its keys follow the backend (a published service that stops answering is withheld again). A stdio MCP server is
 * probed by running it (StdioServers), and while sessions keep it running, by what it listed last.
 */
import { Duration, Effect, Layer, Option, Ref, Stream, SubscriptionRef } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import type { ServiceSpec } from "../../domain/NodeFile.js"
import type { ServiceType } from "../../domain/ServiceType.js"
import * as Finalizer from "../../platform/Finalizer.js"
import { type LocalService, LocalServices } from "../../services/local/LocalServices.js"
import { StdioServers } from "../../services/mcp/StdioServers.js"
import * as Probes from "./Probes.js"

const FIRST_RETRY_MS = 5_000
const MAX_RETRY_MS = 5 * 60_000
/** Published services are probed again this often, so their keys stay current. */
export const REPROBE = Duration.minutes(1)

const keyOf = (type: ServiceType, name: string) => `${type}/${name}`

/** What the probes found, without the in-flight counts (those change per request and are read live). */
type Probed = Omit<LocalService, "inFlight">

const initial = (spec: ServiceSpec): Probed => ({
  type: spec.type,
  name: spec.name,
  description: spec.description,
  spec,
  state: "withheld",
  keys: [],
  lastError: Option.some("not probed yet"),
})

/** The part of the state that announcements depend on: which services are published, with which keys. */
const publicView = (services: ReadonlyArray<Probed>): string =>
  JSON.stringify(services.filter((s) => s.state === "published").map((s) => [s.type, s.name, s.keys]))

export const layer = Layer.scoped(
  LocalServices,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const stdio = yield* StdioServers
    const specs = settings.file.services
    const state = yield* SubscriptionRef.make<ReadonlyArray<Probed>>(specs.map(initial))
    const inFlight = yield* Ref.make<ReadonlyMap<string, number>>(new Map())

    const set = (index: number, next: Probed) =>
      SubscriptionRef.update(state, (all) => all.map((s, i) => (i === index ? next : s)))

    /** Probes one service, for as long as the node runs. */
    const watch = (spec: ServiceSpec, index: number) =>
      Effect.gen(function* () {
        const log = Effect.annotateLogs({ type: spec.type, service: spec.name })
        let failures = 0
        while (true) {
          const outcome = yield* Effect.either(Probes.probe(spec, stdio.tools))
          const before = (yield* SubscriptionRef.get(state))[index] ?? initial(spec)
          if (outcome._tag === "Right") {
            failures = 0
            const next: Probed = { ...before, state: "published", keys: outcome.right, lastError: Option.none() }
            if (before.state !== "published") {
              yield* Effect.logInfo("service published").pipe(log, Effect.annotateLogs({ keys: outcome.right.length }))
            }
            yield* set(index, next)
            yield* Effect.sleep(REPROBE)
            continue
          }
          const error = outcome.left
          failures += 1
          const retryMs = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (failures - 1))
          if (failures === 1) {
            yield* Effect.logWarning(
              before.state === "published" ? "service withheld: backend stopped answering" : "service withheld",
            ).pipe(log, Effect.annotateLogs({ reason: error.reason, retry_in_ms: retryMs }))
          }
          yield* set(index, { ...before, state: "withheld", keys: [], lastError: Option.some(error.reason) })
          yield* Effect.sleep(Duration.millis(retryMs))
        }
      })

    yield* Effect.forEach(specs, (spec, index) => Effect.forkScoped(watch(spec, index)), { discard: true })

    const withLoad = (probed: ReadonlyArray<Probed>) =>
      Effect.map(
        Ref.get(inFlight),
        (counts): ReadonlyArray<LocalService> =>
          probed.map((s) => ({ ...s, inFlight: counts.get(keyOf(s.type, s.name)) ?? 0 })),
      )
    const all = Effect.flatMap(SubscriptionRef.get(state), withLoad)
    const published = Effect.map(all, (services) => services.filter((s) => s.state === "published"))

    const count = (key: string, delta: number) =>
      Ref.update(inFlight, (counts) => {
        const next = new Map(counts)
        const n = (counts.get(key) ?? 0) + delta
        if (n > 0) next.set(key, n)
        else next.delete(key)
        return next
      })

    return LocalServices.of({
      all,
      published,
      lookup: (type, name) =>
        Effect.map(all, (services) => Option.fromNullable(services.find((s) => s.type === type && s.name === name))),
      track: (type, name) =>
        Effect.asVoid(Finalizer.acquire(count(keyOf(type, name), 1), () => count(keyOf(type, name), -1))),
      publishedChanges: state.changes.pipe(
        Stream.changesWith((a, b) => publicView(a) === publicView(b)),
        Stream.mapEffect(withLoad),
        Stream.map((services) => services.filter((s) => s.state === "published")),
      ),
    })
  }),
)

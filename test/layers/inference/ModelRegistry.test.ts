import { IncomingMessage } from "node:http"
import { Socket } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Ref, Stream, TestClock } from "effect"
import { BadGateway } from "../../../src/domain/Errors.js"
import * as ModelRegistry from "../../../src/layers/inference/ModelRegistry.js"
import { type DiscoveredService, Discovery } from "../../../src/services/discovery/Discovery.js"
import { PeerProxy } from "../../../src/services/proxy/PeerProxy.js"

/** A model list answer as node:http would hand it over. */
const answer = (status: number, body: string): IncomingMessage => {
  const message = new IncomingMessage(new Socket())
  message.statusCode = status
  message.headers = { "content-type": "application/json" }
  message.push(Buffer.from(body))
  message.push(null)
  return message
}

const service = (peerId: string): DiscoveredService => ({
  peerId,
  type: "inference",
  name: "llm",
  description: "",
  labels: { zone: peerId },
})

/**
 * A registry over fake discovery and proxy: `providers` is what discovery finds, each answering with its models
 * (none: unreachable). Counts the searches.
 */
const setup = (providers: Ref.Ref<ReadonlyMap<string, ReadonlyArray<string> | undefined>>) =>
  Effect.gen(function* () {
    const searches = yield* Ref.make(0)
    const discovery = Discovery.of({
      find: () =>
        Stream.unwrap(
          Effect.zipRight(
            Ref.update(searches, (n) => n + 1),
            Effect.map(Ref.get(providers), (all) => Stream.fromIterable([...all.keys()].map(service))),
          ),
        ),
      announcers: () => Effect.succeed([]),
      serviceAnnouncers: () => Effect.succeed([]),
      // The registry searches with `find` only.
      providers: () => Stream.die("not used by the model registry"),
      catalogOf: () => Effect.die("not used by the model registry"),
    })
    const proxy = PeerProxy.of({
      forward: (request) =>
        Effect.flatMap(Ref.get(providers), (all) => {
          const models = all.get(request.peerId)
          return models === undefined
            ? Effect.fail(new BadGateway({ message: "unreachable" }))
            : Effect.succeed(answer(200, JSON.stringify({ object: "list", data: models.map((id) => ({ id })) })))
        }),
      fetch: () => Effect.dieMessage("not used"),
    })
    const registry = yield* ModelRegistry.make.pipe(
      Effect.provideService(Discovery, discovery),
      Effect.provideService(PeerProxy, proxy),
    )
    return { registry, searches: Ref.get(searches) }
  })

/** A few milliseconds of real time, for work that waits on node's event loop rather than on the Effect clock. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))

const ids = (models: ReadonlyArray<ModelRegistry.RemoteModel>) => models.map((m) => `${m.peerId}:${m.id}`).sort()

describe("ModelRegistry", () => {
  it.scoped("a view is kept 30 s; unreachable providers are left out; labels come from discovery", () =>
    Effect.gen(function* () {
      const providers = yield* Ref.make(
        new Map([
          ["p1", ["m1", "m2"]],
          ["p2", undefined],
        ]) as ReadonlyMap<string, ReadonlyArray<string> | undefined>,
      )
      const { registry, searches } = yield* setup(providers)
      const first = yield* registry.fresh(false)
      expect(ids(first)).toEqual(["p1:m1", "p1:m2"])
      expect(first[0]?.labels).toEqual({ zone: "p1" })
      yield* Ref.set(providers, new Map([["p1", ["m1", "m2", "m3"]]]))
      yield* TestClock.adjust(Duration.seconds(29))
      expect(ids(yield* registry.fresh(false))).toEqual(["p1:m1", "p1:m2"])
      expect(yield* searches).toBe(1)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(ids(yield* registry.fresh(false))).toEqual(["p1:m1", "p1:m2", "p1:m3"])
      expect(yield* searches).toBe(2)
    }),
  )

  it.scoped("an empty view is not kept: the next call looks again", () =>
    Effect.gen(function* () {
      const providers = yield* Ref.make(new Map() as ReadonlyMap<string, ReadonlyArray<string> | undefined>)
      const { registry, searches } = yield* setup(providers)
      expect(yield* registry.fresh(false)).toEqual([])
      yield* Ref.set(providers, new Map([["p1", ["m1"]]]))
      // (Callers within the same millisecond share a fetch, empty or not.)
      yield* TestClock.adjust(Duration.millis(1))
      expect(ids(yield* registry.fresh(false))).toEqual(["p1:m1"])
      expect(yield* searches).toBe(2)
    }),
  )

  it.scoped("an empty view is kept when the caller has models of its own to list", () =>
    Effect.gen(function* () {
      const providers = yield* Ref.make(new Map() as ReadonlyMap<string, ReadonlyArray<string> | undefined>)
      const { registry, searches } = yield* setup(providers)
      expect(yield* registry.fresh(true)).toEqual([])
      yield* TestClock.adjust(Duration.seconds(29))
      expect(yield* registry.fresh(true)).toEqual([])
      expect(yield* searches).toBe(1)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* registry.fresh(true)
      expect(yield* searches).toBe(2)
    }),
  )

  it.scoped(
    "an old view is answered at once while a new one is fetched behind it; refresh reuses a fetch just made",
    () =>
      Effect.gen(function* () {
        const providers = yield* Ref.make(
          new Map([["p1", ["m1"]]]) as ReadonlyMap<string, ReadonlyArray<string> | undefined>,
        )
        const { registry, searches } = yield* setup(providers)
        yield* registry.kept
        yield* Ref.set(providers, new Map([["p1", ["m1", "m2"]]]))
        yield* TestClock.adjust(Duration.seconds(31))
        expect(ids(yield* registry.kept)).toEqual(["p1:m1"])
        // The background fetch runs on its own fiber, reading its answers on the event loop: polled until it has
        // landed (up to 10 s, for a loaded machine), then asserted.
        for (let i = 0; i < 2000 && (yield* searches) < 2; i++) yield* settle
        for (let i = 0; i < 2000 && ids(yield* registry.kept).length < 2; i++) yield* settle
        expect(ids(yield* registry.kept)).toEqual(["p1:m1", "p1:m2"])
        expect(yield* searches).toBe(2)
        const now = yield* TestClock.currentTimeMillis
        yield* registry.refresh(now)
        expect(yield* searches).toBe(2)
        yield* TestClock.adjust(Duration.millis(1))
        yield* registry.refresh(now + 1)
        expect(yield* searches).toBe(3)
      }),
  )
})

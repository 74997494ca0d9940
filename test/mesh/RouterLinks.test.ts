import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, Ref, Stream } from "effect"
import { ROUTER_ROLE } from "../../src/domain/Policy.js"
import * as RouterLinksLive from "../../src/layers/mesh/RouterLinksLive.js"
import type { ConnectedPeer } from "../../src/p2p/Trust.js"
import { Membership } from "../../src/services/member/Membership.js"
import { MeshDialError, MeshHost, type MeshHostService } from "../../src/services/mesh/MeshHost.js"
import { RouterLinks } from "../../src/services/mesh/RouterLinks.js"

const R1 = "12D3KooWRouterOne"
const R2 = "12D3KooWRouterTwo"
const address = (peerId: string) => `/ip4/127.0.0.1/tcp/1/p2p/${peerId}`

const router = (peerId: string, session: number): ConnectedPeer => ({
  peerId,
  role: ROUTER_ROLE,
  labels: {},
  expiresAtMs: Number.MAX_SAFE_INTEGER,
  keyId: 1,
  credential: new Uint8Array(),
  verifiedAtMs: 0,
  session,
})

describe("RouterLinks", () => {
  it.live("announces a router that went away and came back while the loop was busy dialing another", () =>
    Effect.gen(function* () {
      // R1 is linked; R2 is down, and its second dial hangs until the test lets it fail.
      const peers = yield* Ref.make<ReadonlyArray<ConnectedPeer>>([router(R1, 1)])
      const dials = yield* Ref.make(0)
      const dialing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const host = MeshHost.of({
        peerId: "12D3KooWThisNode",
        addresses: Effect.succeed([]),
        peers: Ref.get(peers),
        nextChange: Effect.never,
        dial: (addr: string) =>
          Effect.gen(function* () {
            if ((yield* Ref.updateAndGet(dials, (n) => n + 1)) === 2) {
              yield* Deferred.succeed(dialing, undefined)
              yield* Deferred.await(release)
            }
            return yield* new MeshDialError({ address: addr, reason: "connection refused" })
          }),
        listen: () => Effect.void,
      } as unknown as MeshHostService)
      const membership = Membership.of({
        routers: Effect.succeed([address(R1), address(R2)]),
        sync: Effect.void,
      } as unknown as Membership["Type"])
      const layer = RouterLinksLive.layer({ relaySlots: 0 }).pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(MeshHost, host), Layer.succeed(Membership, membership))),
      )
      const ups = yield* Effect.gen(function* () {
        const links = yield* RouterLinks
        // Listen once the loop is in its second look (the first announced R1), stuck on R2's dial.
        yield* Deferred.await(dialing)
        const collected = yield* links.linkUps.pipe(Stream.take(1), Stream.runCollect, Effect.fork)
        yield* Effect.sleep("200 millis")
        // R1 restarts between two looks of the loop: gone and back, under a new session.
        yield* Ref.set(peers, [router(R1, 2)])
        yield* Deferred.succeed(release, undefined)
        return yield* Fiber.join(collected).pipe(Effect.timeout("10 seconds"), Effect.option)
      }).pipe(Effect.provide(layer), Effect.scoped)
      expect(Option.map(ups, (chunk) => [...chunk])).toEqual(Option.some([R1]))
    }),
  )
  it.live("asks the control plane for routers when it knows none: a member can join before the first router", () =>
    Effect.gen(function* () {
      const synced = yield* Deferred.make<void>()
      const host = MeshHost.of({
        peerId: "12D3KooWThisNode",
        addresses: Effect.succeed([]),
        peers: Effect.succeed([]),
        nextChange: Effect.never,
      } as unknown as MeshHostService)
      const membership = Membership.of({
        routers: Effect.succeed([]),
        sync: Deferred.succeed(synced, undefined),
      } as unknown as Membership["Type"])
      const layer = RouterLinksLive.layer({ relaySlots: 4 }).pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(MeshHost, host), Layer.succeed(Membership, membership))),
      )
      const asked = yield* Effect.gen(function* () {
        yield* RouterLinks
        return yield* Deferred.await(synced).pipe(Effect.timeout("5 seconds"), Effect.option)
      }).pipe(Effect.provide(layer), Effect.scoped)
      expect(Option.isSome(asked)).toBe(true)
    }),
  )
})

/**
 * A node's relay slots (issue 51): one on every connected router up to the configured number, asked for again when
 * one is refused or lost, and reported as held only while the node announces its circuit address through it. The
 * host is a fake whose `listen` the test answers, so each case decides what a router does with the request.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Ref } from "effect"
import { ROUTER_ROLE } from "../../src/domain/Policy.js"
import * as RouterLinksLive from "../../src/layers/mesh/RouterLinksLive.js"
import type { AuthenticatedPeer, ConnectedPeer } from "../../src/p2p/Trust.js"
import { Membership } from "../../src/services/member/Membership.js"
import { MeshHost, type MeshHostService, MeshListenError } from "../../src/services/mesh/MeshHost.js"
import { type RouterLink, RouterLinks } from "../../src/services/mesh/RouterLinks.js"

const ME = "12D3KooWThisNode"
const ROUTERS = ["12D3KooWRouterOne", "12D3KooWRouterTwo", "12D3KooWRouterThree"]
const addressOf = (peerId: string) => `/ip4/11.0.0.2/tcp/4001/p2p/${peerId}`
const circuitOf = (peerId: string) => `${addressOf(peerId)}/p2p-circuit/p2p/${ME}`

const connected = (peerId: string): ConnectedPeer => ({
  peerId,
  role: ROUTER_ROLE,
  labels: {},
  expiresAtMs: Number.MAX_SAFE_INTEGER,
  keyId: 1,
  credential: new Uint8Array(),
  verifiedAtMs: 0,
  session: 1,
})

/** What the fake router does with a slot request: grant it, refuse it, or never answer. */
type Answer = "grant" | "refuse" | "hang"

/** A host linked to every router; `listen` asks `answer`, and a granted slot shows as a circuit address. */
const fakeHost = (answer: (router: string) => Effect.Effect<Answer>) =>
  Effect.gen(function* () {
    const addresses = yield* Ref.make<ReadonlyArray<string>>([`/ip4/192.168.1.2/tcp/4001/p2p/${ME}`])
    const asked = yield* Ref.make<ReadonlyArray<string>>([])
    const host = MeshHost.of({
      peerId: ME,
      addresses: Ref.get(addresses),
      peers: Effect.succeed(ROUTERS.map(connected)),
      nextChange: Effect.never,
      dial: () => Effect.succeed({} as AuthenticatedPeer),
      listen: (circuit: string) =>
        Effect.gen(function* () {
          const router = circuit.slice(0, circuit.indexOf("/p2p-circuit")).split("/p2p/")[1] ?? ""
          yield* Ref.update(asked, (all) => [...all, router])
          const what = yield* answer(router)
          if (what === "hang") return yield* Effect.never
          if (what === "refuse") return yield* new MeshListenError({ address: circuit, reason: "refused" })
          yield* Ref.update(addresses, (all) => [...all, circuitOf(router)])
        }),
    } as unknown as MeshHostService)
    return { host, addresses, asked }
  })

const linksWith = (host: MeshHostService, relaySlots: number) =>
  RouterLinksLive.layer({ relaySlots }).pipe(
    Layer.provide(
      Layer.mergeAll(
        Layer.succeed(MeshHost, host),
        Layer.succeed(Membership, {
          routers: Effect.succeed(ROUTERS.map(addressOf)),
          sync: Effect.void,
        } as unknown as Membership["Type"]),
      ),
    ),
  )

/** Polls the links until `done` holds (the loop looks every second), at most 20 s. */
const until = (
  done: (links: ReadonlyArray<RouterLink>) => boolean,
): Effect.Effect<ReadonlyArray<RouterLink>, Error, RouterLinks> =>
  Effect.gen(function* () {
    const links = yield* RouterLinks
    const look: Effect.Effect<ReadonlyArray<RouterLink>> = Effect.flatMap(links.links, (now) =>
      done(now) ? Effect.succeed(now) : Effect.zipRight(Effect.sleep("100 millis"), look),
    )
    return yield* look.pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("not reached") }))
  })

const held = (links: ReadonlyArray<RouterLink>) => links.filter((l) => l.relayed).map((l) => l.peerId)

describe("relay slots", () => {
  it.live("are held on every connected router, one not answering holding up none of the others", () =>
    Effect.gen(function* () {
      const { host } = yield* fakeHost((router) => Effect.succeed(router === ROUTERS[0] ? "hang" : "grant"))
      const links = yield* until((l) => held(l).length === 2).pipe(Effect.provide(linksWith(host, 4)), Effect.scoped)
      expect(held(links).sort()).toEqual([ROUTERS[1], ROUTERS[2]].sort())
    }),
  )

  it.live("stop at the configured number", () =>
    Effect.gen(function* () {
      const { host, asked } = yield* fakeHost(() => Effect.succeed("grant"))
      const links = yield* Effect.gen(function* () {
        const settled = yield* until((l) => held(l).length >= 1)
        // Several more looks of the loop: none asks for a second slot.
        yield* Effect.sleep("2500 millis")
        return settled
      }).pipe(Effect.provide(linksWith(host, 1)), Effect.scoped)
      expect(held(links)).toEqual([ROUTERS[0]])
      expect(yield* Ref.get(asked)).toEqual([ROUTERS[0]])
    }),
  )

  it.live("are asked for again after a refusal, and the refusal is reported until then", () =>
    Effect.gen(function* () {
      const refusals = yield* Ref.make(0)
      const seenRefused = yield* Deferred.make<void>()
      const { host } = yield* fakeHost((router) =>
        router !== ROUTERS[0]
          ? Effect.succeed("grant")
          : Ref.modify(refusals, (n): [Answer, number] => [n < 1 ? "refuse" : "grant", n + 1]),
      )
      const links = yield* Effect.gen(function* () {
        const refused = yield* until((l) =>
          Option.isSome(l.find((x) => x.peerId === ROUTERS[0])?.relayError ?? Option.none()),
        )
        yield* Deferred.succeed(seenRefused, undefined)
        expect(held(refused)).not.toContain(ROUTERS[0])
        return yield* until((l) => held(l).length === 3)
      }).pipe(Effect.provide(linksWith(host, 4)), Effect.scoped)
      expect(Option.isNone(links.find((l) => l.peerId === ROUTERS[0])?.relayError ?? Option.some(""))).toBe(true)
    }),
  )

  it.live("are taken again when one is lost (a router restarted, a renewal failed)", () =>
    Effect.gen(function* () {
      const { host, addresses, asked } = yield* fakeHost(() => Effect.succeed("grant"))
      const links = yield* Effect.gen(function* () {
        yield* until((l) => held(l).length === 3)
        // libp2p withdraws the circuit address when the reservation goes.
        yield* Ref.update(addresses, (all) => all.filter((a) => a !== circuitOf(ROUTERS[1] as string)))
        expect(held(yield* (yield* RouterLinks).links)).not.toContain(ROUTERS[1])
        return yield* until((l) => held(l).length === 3)
      }).pipe(Effect.provide(linksWith(host, 4)), Effect.scoped)
      expect(held(links)).toContain(ROUTERS[1])
      expect((yield* Ref.get(asked)).filter((r) => r === ROUTERS[1]).length).toBe(2)
    }),
  )
})

/**
 * A proof of possession is accepted within five minutes of its timestamp, either way, and refused outside: on
 * `/register` (OIDC enrollment) and on `/routers/lease`. A refused request leaves no node and no lease behind.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { RouterLeaseRequestSchema } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { addressOf, enrollRouter } from "../support/routers.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const WINDOW = 5 * 60_000
const STALE = { error: "unauthorized", message: "stale or invalid challenge timestamp" }

/** POST /routers/lease with a proof timestamped `atMs`. */
const leaseAt = (cp: Harness.ControlPlaneHarness, router: MeshClient.Peer, credential: Uint8Array, atMs: number) =>
  Effect.flatMap(MeshClient.challenge(router, "routers-lease", atMs), (proof) =>
    MeshClient.postProto(
      `${cp.url}/routers/lease`,
      RouterLeaseRequestSchema,
      { ...proof, peerId: router.peerId, addresses: [addressOf(router.peerId)] },
      { authorization: `Bearer ${Biscuit.toText(credential)}` },
    ),
  )

describeDatabases("a stale challenge", (db) => {
  it.scoped("is refused on /register, five minutes before or after; a fresh one enrolls", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
      yield* setPolicy(cp, {
        roles: [{ name: "mesh:role:node" }],
        bindings: [{ role: "mesh:role:node", members: ["user:alice"] }],
      })
      const idToken = yield* issuer.mint({ sub: "alice" })
      const peer = PeerKey.generate()
      for (const atMs of [T0 - WINDOW - 1, T0 + WINDOW + 1, T0 - 60 * 60_000]) {
        const refused = yield* MeshClient.register(cp.url, peer, idToken, { atMs })
        expect([refused.status, MeshClient.errorOf(refused)], `challenge at ${atMs - T0} ms`).toEqual([401, STALE])
      }
      const nodes = (yield* admin(cp, "GET", "/admin/status")).json as { nodes: ReadonlyArray<unknown> }
      expect(nodes.nodes).toEqual([])
      // Just inside the window, the same token and key enroll.
      const accepted = yield* MeshClient.register(cp.url, peer, idToken, { atMs: T0 - WINDOW + 1_000 })
      expect(accepted.status).toBe(200)
    }),
  )

  it.scoped("is refused on /routers/lease, and no lease is recorded; a fresh one is", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const router = yield* enrollRouter(cp)
      // A proof signed now and sent after the window has passed.
      yield* TestClock.adjust(Duration.millis(WINDOW + 1))
      const now = T0 + WINDOW + 1
      for (const atMs of [T0, now + WINDOW + 1]) {
        const refused = yield* leaseAt(cp, router.peer, router.credential, atMs)
        expect([refused.status, MeshClient.errorOf(refused)], `challenge at ${atMs - now} ms`).toEqual([401, STALE])
      }
      expect((yield* MeshClient.info(cp.url)).routerAddresses).toEqual([])
      const accepted = yield* leaseAt(cp, router.peer, router.credential, now - WINDOW + 1_000)
      expect(accepted.status).toBe(200)
      expect((yield* MeshClient.info(cp.url)).routerAddresses).toEqual([addressOf(router.peer.peerId)])
    }),
  )
})

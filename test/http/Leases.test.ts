import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { enrollDirectly } from "../support/nodes.js"
import { addressOf, enrollRouter } from "../support/routers.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("router leases and /info", (db) => {
  it.scoped("an enrollment answer carries the addresses of the routers with live leases", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const router = yield* enrollRouter(cp)
      yield* MeshClient.lease(cp.url, router.peer, router.credential, [addressOf(router.peer.peerId)])
      const token = yield* mintToken(cp)
      const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token))
      expect(enrolled.routerAddresses).toEqual([addressOf(router.peer.peerId)])
    }),
  )

  it.scoped("a router's addresses appear in /info and vanish after the lease duration without renewal", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({
        database: yield* db.fresh,
        leaseDuration: Duration.minutes(15),
        issuers: ["https://issuer.example", "https://other.example"],
        allowedAudiences: ["aud-1", "aud-2"],
      })
      const a = yield* enrollRouter(cp)
      const b = yield* enrollRouter(cp)
      const leased = yield* MeshClient.decodeLease(
        yield* MeshClient.lease(cp.url, a.peer, a.credential, [
          addressOf(a.peer.peerId),
          addressOf(a.peer.peerId, 4002),
        ]),
      )
      expect(leased.success).toBe(true)
      expect(Number(leased.expireTime?.seconds) * 1000).toBe(T0 + 15 * 60_000)
      yield* MeshClient.decodeLease(yield* MeshClient.lease(cp.url, b.peer, b.credential, [addressOf(b.peer.peerId)]))

      const info = yield* MeshClient.info(cp.url)
      expect(info.oidcIssuer).toBe("https://issuer.example")
      expect(info.audience).toBe("aud-1")
      expect(info.clientId).toBe("aud-1")
      expect([...info.routerAddresses].sort()).toEqual(
        [addressOf(a.peer.peerId), addressOf(a.peer.peerId, 4002), addressOf(b.peer.peerId)].sort(),
      )

      // b renews, a does not.
      yield* TestClock.adjust(Duration.minutes(10))
      yield* MeshClient.lease(cp.url, b.peer, b.credential, [addressOf(b.peer.peerId)])
      yield* TestClock.adjust(Duration.minutes(6))
      expect((yield* MeshClient.info(cp.url)).routerAddresses).toEqual([addressOf(b.peer.peerId)])
    }),
  )

  it.scoped("refuses a foreign address with 400, a node's credential with 403, a bad proof with 401", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const router = yield* enrollRouter(cp)
      const node = yield* enrollDirectly(cp)
      const outcome = (answer: MeshClient.Answer) => [answer.status, MeshClient.errorOf(answer).message]

      const other = PeerKey.generate().peerId
      expect(outcome(yield* MeshClient.lease(cp.url, router.peer, router.credential, [addressOf(other)]))).toEqual([
        400,
        `address does not end in the router's own peer id: ${addressOf(other)}`,
      ])
      expect((yield* MeshClient.lease(cp.url, router.peer, router.credential, ["not a multiaddr"])).status).toBe(400)
      expect(
        outcome(yield* MeshClient.lease(cp.url, node.peer, node.credential, [addressOf(node.peer.peerId)])),
      ).toEqual([403, "credential is not a router's"])
      const stranger = { ...router.peer, seed: PeerKey.generate().seed }
      expect(
        (yield* MeshClient.lease(cp.url, stranger, router.credential, [addressOf(router.peer.peerId)])).status,
      ).toBe(401)
      expect((yield* MeshClient.info(cp.url)).routerAddresses).toEqual([])
      // A banned router is refused.
      yield* admin(cp, "POST", "/admin/revoke", { peer_id: router.peer.peerId })
      const banned = yield* MeshClient.lease(cp.url, router.peer, router.credential, [addressOf(router.peer.peerId)])
      expect([banned.status, MeshClient.errorOf(banned).message]).toEqual([403, "router is banned"])
    }),
  )
})

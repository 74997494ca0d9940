import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("GET /enroll/status", (db) => {
  it.scoped("releases an approval's credential once; later polls report APPROVED without one", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)

      yield* TestClock.adjust(Duration.seconds(1))
      const released = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
      expect(released.status).toBe(EnrollmentStatus.APPROVED)
      expect(released.biscuitToken.length).toBeGreaterThan(0)

      // A captured poll cannot be replayed: the challenge is spent.
      const replay = yield* MeshClient.enrollStatus(cp.url, peer)
      expect([replay.status, MeshClient.errorOf(replay).message]).toEqual([401, "challenge was already used"])

      // A fresh poll reports the state and mints nothing: the released credential stays the current one.
      yield* TestClock.adjust(Duration.seconds(30))
      const later = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
      expect(later.status).toBe(EnrollmentStatus.APPROVED)
      expect(later.biscuitToken.length).toBe(0)
      expect(later.errorMessage).toBe("the credential was already collected; enroll again with the bootstrap token")
      const refreshed = yield* MeshClient.decodeRefresh(yield* MeshClient.refresh(cp.url, peer, released.biscuitToken))

      // An enrollee that lost the answer enrolls again with its token, as an approved peer.
      yield* TestClock.adjust(Duration.seconds(1))
      const again = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      expect(again.status).toBe(EnrollmentStatus.APPROVED)
      expect(again.biscuitToken.length).toBeGreaterThan(0)
      expect((yield* MeshClient.refresh(cp.url, peer, refreshed.biscuitToken)).status).toBe(401)
      expect((yield* MeshClient.refresh(cp.url, peer, again.biscuitToken)).status).toBe(200)
    }),
  )

  it.scoped("an auto-approved enrollee got its credential from /enroll: polls mint nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      expect(enrolled.status).toBe(EnrollmentStatus.APPROVED)

      yield* TestClock.adjust(Duration.seconds(1))
      const polled = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
      expect([polled.status, polled.biscuitToken.length]).toEqual([EnrollmentStatus.APPROVED, 0])
      // The credential /enroll returned was not superseded by the poll.
      expect((yield* MeshClient.refresh(cp.url, peer, enrolled.biscuitToken)).status).toBe(200)
    }),
  )

  it.scoped("a banned enrollee collects nothing, and the credential stays uncollected", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)
      yield* admin(cp, "POST", "/admin/revoke", { peer_id: peer.peerId })

      const refused = yield* MeshClient.enrollStatus(cp.url, peer)
      expect([refused.status, MeshClient.errorOf(refused).message]).toEqual([403, "node is banned"])
      yield* admin(cp, "POST", `/admin/nodes/${peer.peerId}/unban`)
      yield* TestClock.adjust(Duration.seconds(1))
      const collected = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
      expect(collected.biscuitToken.length).toBeGreaterThan(0)
    }),
  )
})

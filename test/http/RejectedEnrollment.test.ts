/**
 * What a rejected enrollee is told: `GET /enroll/status` answers 200 `REJECTED`, with no credential and no poll
 * interval (nothing will change by waiting), as often as it asks; enrolling again with the same token answers the
 * same and queues nothing new for the operator.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("a rejected enrollee", (db) => {
  it.scoped("polls 200 REJECTED without a credential; enrolling again with the token changes nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      const rejected = yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/reject`)
      expect([rejected.status, rejected.json]).toMatchObject([200, { status: "rejected", resolved_by: "operator" }])

      for (let poll = 0; poll < 2; poll++) {
        yield* TestClock.adjust(Duration.seconds(1))
        const answer = yield* MeshClient.enrollStatus(cp.url, peer)
        const status = yield* MeshClient.decodeEnroll(answer)
        expect({
          status: status.status,
          requestId: status.requestId,
          credential: status.biscuitToken.length,
          pollIntervalSeconds: status.pollIntervalSeconds,
        }).toEqual({
          status: EnrollmentStatus.REJECTED,
          requestId: queued.requestId,
          credential: 0,
          pollIntervalSeconds: 0,
        })
      }

      yield* TestClock.adjust(Duration.seconds(1))
      const again = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      expect([again.status, again.requestId, again.biscuitToken.length]).toEqual([
        EnrollmentStatus.REJECTED,
        queued.requestId,
        0,
      ])
      expect((yield* admin(cp, "GET", "/admin/enrollments")).json).toEqual([])
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      const [row] = yield* sql<{ usages: number; nodes: number; requests: number }>`SELECT
        (SELECT usages_count FROM bootstrap_tokens WHERE id = ${token.id}) AS usages,
        (SELECT COUNT(*) FROM nodes) AS nodes,
        (SELECT COUNT(*) FROM enrollment_requests) AS requests`
      expect(row).toEqual({ usages: 0, nodes: 0, requests: 1 })
    }),
  )

  it.scoped("enrolling with another token queues a new request, which the operator decides anew", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const peer = PeerKey.generate()
      const first = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, (yield* mintToken(cp)).token))
      yield* admin(cp, "POST", `/admin/enrollments/${first.requestId}/reject`)

      yield* TestClock.adjust(Duration.seconds(1))
      const another = yield* mintToken(cp)
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, another.token))
      expect(queued.status).toBe(EnrollmentStatus.PENDING)
      expect(queued.requestId).not.toBe(first.requestId)
      expect((yield* admin(cp, "GET", "/admin/enrollments")).json).toMatchObject([
        { id: queued.requestId, peer_id: peer.peerId, token_id: another.id, status: "pending" },
      ])
      expect((yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)).status).toBe(200)
      yield* TestClock.adjust(Duration.seconds(1))
      const collected = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
      expect([collected.status, collected.biscuitToken.length > 0]).toEqual([EnrollmentStatus.APPROVED, true])
    }),
  )
})

/**
 * An operator's approval rechecks what held when the request was queued: the token must still be usable and the
 * labels still within the role's `allowed_labels`. A refused approval changes nothing: the request stays pending, no
 * usage is spent, no node exists, and the enrollee keeps polling PENDING.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken, setPolicy } from "../support/admin.js"
import { type DriverUnderTest, describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

/** A control plane that queues enrollments, and one request queued on a fresh token. */
const queued = (db: DriverUnderTest, options: { readonly labels?: Record<string, string> } = {}) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const cp = yield* Harness.make({ database: yield* db.fresh })
    if (options.labels !== undefined) {
      yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*"] }] })
    }
    const token = yield* mintToken(cp, { ttl_hours: 1 })
    const peer = PeerKey.generate()
    const answer = yield* MeshClient.decodeEnroll(
      yield* MeshClient.enroll(cp.url, peer, token.token, { labels: options.labels ?? {} }),
    )
    expect(answer.status).toBe(EnrollmentStatus.PENDING)
    return { cp, token, peer, requestId: answer.requestId }
  })

/** The refused approval left everything as it was. */
const unchanged = (cp: Harness.ControlPlaneHarness, tokenId: string, peer: MeshClient.Peer) =>
  Effect.gen(function* () {
    const sql = Context.get(cp.context, SqlClient.SqlClient)
    const [row] = yield* sql<{ usages: number; nodes: number; pending: number }>`SELECT
      (SELECT usages_count FROM bootstrap_tokens WHERE id = ${tokenId}) AS usages,
      (SELECT COUNT(*) FROM nodes) AS nodes,
      (SELECT COUNT(*) FROM enrollment_requests WHERE status = 'pending') AS pending`
    expect(row).toEqual({ usages: 0, nodes: 0, pending: 1 })
    yield* TestClock.adjust(Duration.seconds(1))
    const polled = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
    expect([polled.status, polled.biscuitToken.length]).toEqual([EnrollmentStatus.PENDING, 0])
  })

describeDatabases("approving a queued enrollment", (db) => {
  it.scoped("is refused with 410 when the token was revoked after the request was queued", () =>
    Effect.gen(function* () {
      const { cp, token, peer, requestId } = yield* queued(db)
      yield* admin(cp, "DELETE", `/admin/bootstrap-tokens/${token.id}`)
      const refused = yield* admin(cp, "POST", `/admin/enrollments/${requestId}/approve`)
      expect([refused.status, refused.json]).toEqual([
        410,
        { error: "gone", message: "bootstrap token has been revoked" },
      ])
      yield* unchanged(cp, token.id, peer)
    }),
  )

  it.scoped("is refused with 410 when the token expired after the request was queued", () =>
    Effect.gen(function* () {
      const { cp, token, peer, requestId } = yield* queued(db)
      yield* TestClock.adjust(Duration.minutes(61))
      const refused = yield* admin(cp, "POST", `/admin/enrollments/${requestId}/approve`)
      expect([refused.status, refused.json]).toEqual([410, { error: "gone", message: "bootstrap token has expired" }])
      yield* unchanged(cp, token.id, peer)
    }),
  )

  it.scoped("is refused with 410 when another approval spent the token's last usage; the resolve is rolled back", () =>
    Effect.gen(function* () {
      const { cp, token, requestId } = yield* queued(db)
      const other = PeerKey.generate()
      const second = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, other, token.token))
      expect((yield* admin(cp, "POST", `/admin/enrollments/${requestId}/approve`)).status).toBe(200)
      const refused = yield* admin(cp, "POST", `/admin/enrollments/${second.requestId}/approve`)
      expect([refused.status, refused.json]).toEqual([
        410,
        { error: "gone", message: "bootstrap token has no usages left" },
      ])
      // The refused request is still pending and can be rejected; its peer has no node.
      expect((yield* admin(cp, "GET", "/admin/enrollments")).json).toMatchObject([
        { id: second.requestId, peer_id: other.peerId, status: "pending" },
      ])
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      const nodes = yield* sql<{ peer_id: string }>`SELECT peer_id FROM nodes WHERE peer_id = ${other.peerId}`
      expect(nodes).toEqual([])
      expect((yield* admin(cp, "POST", `/admin/enrollments/${second.requestId}/reject`)).status).toBe(200)
    }),
  )

  it.scoped("is refused with 403 when the request's labels are no longer within the role's allowed_labels", () =>
    Effect.gen(function* () {
      const { cp, token, peer, requestId } = yield* queued(db, { labels: { zone: "eu" } })
      // The policy the request was queued under allowed zone=*; the one in force at approval allows only zone=us.
      yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=us"] }] })
      const refused = yield* admin(cp, "POST", `/admin/enrollments/${requestId}/approve`)
      expect([refused.status, refused.json]).toEqual([
        403,
        { error: "forbidden", message: "label not permitted: zone=eu" },
      ])
      yield* unchanged(cp, token.id, peer)

      // The same request is approved once the policy allows its labels again: the refusal resolved nothing.
      yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*"] }] })
      const approved = yield* admin(cp, "POST", `/admin/enrollments/${requestId}/approve`)
      expect(approved.status).toBe(200)
    }),
  )
})

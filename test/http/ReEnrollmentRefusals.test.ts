/**
 * An approved peer enrolls again without approval only while its token is valid and the role matches its record. A
 * refused re-enrollment changes nothing: the node keeps its role and its current credential, no usage is spent, and
 * nothing is queued for an operator.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { type DriverUnderTest, describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

/** A node admitted through an operator's approval, holding its collected credential. */
const approvedNode = (db: DriverUnderTest) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const cp = yield* Harness.make({ database: yield* db.fresh })
    const token = yield* mintToken(cp, { ttl_hours: 1, max_usages: 5 })
    const peer = PeerKey.generate()
    const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
    yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)
    const collected = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
    expect(collected.biscuitToken.length).toBeGreaterThan(0)
    yield* TestClock.adjust(Duration.seconds(1))
    return { cp, token, peer, credential: collected.biscuitToken }
  })

/** The node is as the approval left it: its role, one usage spent, nothing pending, its credential current. */
const unchanged = (
  cp: Harness.ControlPlaneHarness,
  peer: MeshClient.Peer,
  credential: Uint8Array,
  tokens: ReadonlyArray<{ readonly id: string; readonly usages: number }>,
) =>
  Effect.gen(function* () {
    const sql = Context.get(cp.context, SqlClient.SqlClient)
    const nodes = yield* sql<{ role: string }>`SELECT role FROM nodes WHERE peer_id = ${peer.peerId}`
    expect(nodes).toEqual([{ role: "mesh:role:node" }])
    const [pending] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM enrollment_requests
      WHERE status = 'pending'`
    expect(Number(pending?.n)).toBe(0)
    for (const token of tokens) {
      const [row] = yield* sql<{ usages: number }>`SELECT usages_count AS usages FROM bootstrap_tokens
        WHERE id = ${token.id}`
      expect([token.id, Number(row?.usages)]).toEqual([token.id, token.usages])
    }
    expect((yield* MeshClient.refresh(cp.url, peer, credential)).status).toBe(200)
  })

describeDatabases("enrolling again as an approved peer", (db) => {
  it.scoped("with a token of another role is refused with 403; the node keeps its role and credential", () =>
    Effect.gen(function* () {
      const { cp, token, peer, credential } = yield* approvedNode(db)
      const routerToken = yield* mintToken(cp, { role: "mesh:role:router" })
      for (const role of ["mesh:role:router", ""]) {
        const refused = yield* MeshClient.enroll(cp.url, peer, routerToken.token, { role })
        expect([refused.status, MeshClient.errorOf(refused)]).toEqual([
          403,
          { error: "forbidden", message: "node is enrolled with another role" },
        ])
        yield* TestClock.adjust(Duration.seconds(1))
      }
      yield* unchanged(cp, peer, credential, [
        { id: token.id, usages: 1 },
        { id: routerToken.id, usages: 0 },
      ])
    }),
  )

  it.scoped("with its token revoked is refused with 410; the node keeps its credential", () =>
    Effect.gen(function* () {
      const { cp, token, peer, credential } = yield* approvedNode(db)
      yield* admin(cp, "DELETE", `/admin/bootstrap-tokens/${token.id}`)
      const refused = yield* MeshClient.enroll(cp.url, peer, token.token)
      expect([refused.status, MeshClient.errorOf(refused)]).toEqual([
        410,
        { error: "gone", message: "bootstrap token has been revoked" },
      ])
      yield* unchanged(cp, peer, credential, [{ id: token.id, usages: 1 }])
    }),
  )

  it.scoped("with its token expired is refused with 410; the node keeps its credential", () =>
    Effect.gen(function* () {
      const { cp, token, peer, credential } = yield* approvedNode(db)
      yield* TestClock.adjust(Duration.minutes(61))
      const refused = yield* MeshClient.enroll(cp.url, peer, token.token)
      expect([refused.status, MeshClient.errorOf(refused)]).toEqual([
        410,
        { error: "gone", message: "bootstrap token has expired" },
      ])
      yield* unchanged(cp, peer, credential, [{ id: token.id, usages: 1 }])
    }),
  )
})

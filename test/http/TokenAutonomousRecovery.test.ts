/**
 * A bootstrap token's `autonomous_recovery` is carried to the node it admits (default false), whether the node is
 * auto-approved or approved by an operator, and it decides what the spec says it decides: whether the node can
 * refresh a credential signed by a retired key.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { listKeys } from "../support/keys.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

/** Enrolls a new peer with `token`, through the operator's approval when the control plane queues enrollments. */
const enrollWith = (cp: Harness.ControlPlaneHarness, token: string) =>
  Effect.gen(function* () {
    const peer = PeerKey.generate()
    let answer = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token))
    if (answer.status === EnrollmentStatus.PENDING) {
      const approved = yield* admin(cp, "POST", `/admin/enrollments/${answer.requestId}/approve`)
      expect(approved.status).toBe(200)
      answer = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
    }
    expect(answer.biscuitToken.length).toBeGreaterThan(0)
    return { peer, credential: answer.biscuitToken }
  })

const recoveryFlags = (cp: Harness.ControlPlaneHarness) =>
  Effect.map(admin(cp, "GET", "/admin/status"), (answer) => {
    const nodes = (answer.json as { nodes: ReadonlyArray<{ peer_id: string; autonomous_recovery: boolean }> }).nodes
    return Object.fromEntries(nodes.map((n) => [n.peer_id, n.autonomous_recovery]))
  })

describeDatabases("a bootstrap token's autonomous_recovery", (db) => {
  for (const autoApproveEnrollment of [true, false]) {
    it.scoped(
      `is carried to the node it admits, default false (${autoApproveEnrollment ? "auto-approved" : "approved by the operator"})`,
      () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(T0)
          const cp = yield* Harness.make({
            database: yield* db.fresh,
            autoApproveEnrollment,
            keyRotationInterval: Duration.hours(24),
            keyGracePeriod: Duration.hours(1),
            biscuitTtl: Duration.hours(48),
          })
          const recoveringToken = yield* mintToken(cp, { autonomous_recovery: true })
          const plainToken = yield* mintToken(cp)
          const explicitToken = yield* mintToken(cp, { autonomous_recovery: false })
          const recovering = yield* enrollWith(cp, recoveringToken.token)
          const plain = yield* enrollWith(cp, plainToken.token)
          const explicit = yield* enrollWith(cp, explicitToken.token)
          expect(yield* recoveryFlags(cp)).toEqual({
            [recovering.peer.peerId]: true,
            [plain.peer.peerId]: false,
            [explicit.peer.peerId]: false,
          })

          // Retire the key that signed all three credentials.
          yield* TestClock.adjust(Duration.hours(24))
          yield* eventually(listKeys(cp.url), (keys) => keys.length === 2, { what: "rotation" })
          yield* TestClock.adjust(Duration.minutes(61))
          yield* eventually(listKeys(cp.url), (keys) => keys.length === 1, { what: "previous key retired" })

          expect((yield* MeshClient.refresh(cp.url, recovering.peer, recovering.credential)).status).toBe(200)
          for (const node of [plain, explicit]) {
            const refused = yield* MeshClient.refresh(cp.url, node.peer, node.credential)
            expect([refused.status, MeshClient.errorOf(refused).message]).toEqual([
              401,
              "credential is signed by a retired key and the node is not opted in to autonomous recovery",
            ])
          }
        }),
    )
  }
})

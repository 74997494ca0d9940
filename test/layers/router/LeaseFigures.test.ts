/**
 * The router's figures on the control plane (connected peers, DHT size) follow the mesh within seconds of a change,
 * not at the next lease renewal: renewed at start, they read 0 peers while nodes are already connected.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as LeaseRenewal from "../../../src/layers/router/LeaseRenewal.js"
import * as Harness from "../../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../../src/testing/RouterHarness.js"
import { admin } from "../../support/admin.js"
import { eventually } from "../../support/eventually.js"

interface RouterRow {
  readonly peer_id: string
  readonly connected_peers: number
  readonly renewed_at: string
}

const routers = (cp: Harness.ControlPlaneHarness) =>
  Effect.map(admin(cp, "GET", "/admin/status"), (answer) => (answer.json as { routers: Array<RouterRow> }).routers)

describe("the router's lease figures", () => {
  it.scopedLive(
    "a node connecting shows in the router's figures long before the next renewal",
    () =>
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        // Renewals an hour apart: only a change of the figures can renew the lease within this test.
        const router = yield* RouterHarness.make(cp, { leaseRenewInterval: Duration.hours(1) })
        const [first] = yield* eventually(routers(cp), (rows) => rows.length === 1, { what: "the router's lease" })
        expect(first?.connected_peers).toBe(0)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        const checks = Duration.toMillis(LeaseRenewal.FIGURES_CHECK)
        const [after] = yield* eventually(routers(cp), (rows) => (rows[0]?.connected_peers ?? 0) >= 1, {
          timeoutMs: 3 * checks,
          what: "the node in the router's figures",
        })
        expect(after?.peer_id).toBe(router.peerId)
        // When they were measured: the renewal that carried them, after the first.
        expect(Date.parse(after?.renewed_at ?? "")).toBeGreaterThan(Date.parse(first?.renewed_at ?? ""))
      }),
    120_000,
  )
})

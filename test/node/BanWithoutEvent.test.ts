/**
 * A ban whose mesh event never arrives (issue 24): the control plane records its events but none reaches the mesh,
 * as if every one was lost. A node still learns the ban from its next /info sync and refuses the banned peer within
 * its sync interval.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { admin, setPolicy } from "../support/admin.js"
import { testBackend } from "./backends.js"

const SYNC = Duration.seconds(3)

const POLICY = {
  roles: [
    { name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["inference://*"], allowed_targets: ["*"] },
  ],
  bindings: [],
}

const status = (node: NodeHarness.NodeHarness, path: string) =>
  Effect.promise(() =>
    fetch(`${node.url}${path}`, { headers: { "x-mesh-authentication": `Bearer ${node.apiToken}` } }).then(
      async (r) => ({ status: r.status, body: await r.text() }),
    ),
  )

describe("a ban without its mesh event", () => {
  it.live("the node's next /info sync applies it: the banned peer is refused within the sync interval", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const backend = yield* testBackend
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true, events: "memory" })
        yield* setPolicy(cp, POLICY)
        yield* RouterHarness.make(cp)
        const b = yield* NodeHarness.make(cp, {
          file: {
            labels: {},
            egress: { require_labels: {} },
            services: [{ name: "stream", type: "inference", description: "", target_url: backend.url, env: {} }],
          },
        })
        const a = yield* NodeHarness.make(cp, { overrides: { syncInterval: SYNC } })
        yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
        const bId = yield* b.peerId
        const path = `/mesh/${bId}/inference/stream/echo`
        expect((yield* status(a, path)).status).toBe(200)

        expect((yield* admin(cp, "POST", "/admin/revoke", { peer_id: bId })).status).toBe(200)
        const bannedAt = Date.now()
        const refused = yield* status(a, path).pipe(
          Effect.filterOrFail((answer) => answer.status !== 200),
          Effect.retry(Schedule.spaced("100 millis")),
          Effect.timeout(Duration.sum(SYNC, Duration.seconds(15))),
        )
        expect(refused.status).toBe(502)
        expect(refused.body).toContain("banned")
        // No event carried it: the sync did, so it took at least a moment, and at most an interval plus a sync.
        console.log(`ban applied by sync after ${Date.now() - bannedAt} ms (sync interval ${Duration.format(SYNC)})`)
      }),
    ),
  )
})

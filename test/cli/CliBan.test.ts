/**
 * A ban written by the admin command straight into the database reaches running nodes through the signed mesh event
 * the running control plane publishes when it notices the write (postgres NOTIFY; sqlite's data_version, polled every
 * second). Members here sync /info only every 10 minutes and the router renews its lease as rarely, so nothing but
 * the write itself wakes the control plane, and nothing but the event tells the members within the test.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, Redacted, Schedule } from "effect"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { testBackend } from "../node/backends.js"
import { setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { runBin } from "../support/processes.js"

const POLICY = {
  roles: [
    { name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["inference://*"], allowed_targets: ["*"] },
  ],
  bindings: [],
}

/** The spec's budget for a ban to reach running members. */
const BUDGET = Duration.seconds(5)
const SLOW_SYNC = Duration.minutes(10)

const proxied = (node: NodeHarness.NodeHarness, path: string) =>
  Effect.promise(() =>
    fetch(`${node.url}${path}`, { headers: { "x-mesh-authentication": `Bearer ${node.apiToken}` } }).then(
      async (r) => ({ status: r.status, body: await r.text() }),
    ),
  )

describeDatabases("a ban from the command line reaches running nodes", (db) => {
  it.live(
    "the running control plane announces the CLI's ban and unban; node A refuses B within 5 s",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const database = yield* db.freshShared
          const backend = yield* testBackend
          const cp = yield* ControlPlaneHarness.make({ database, autoApproveEnrollment: true })
          yield* setPolicy(cp, POLICY)
          // Slow lease renewals too: each one wakes the control plane's watch, which would hide a missed write.
          yield* RouterHarness.make(cp, { keysSyncInterval: SLOW_SYNC, leaseRenewInterval: SLOW_SYNC })
          const b = yield* NodeHarness.make(cp, {
            overrides: { syncInterval: SLOW_SYNC },
            file: {
              labels: {},
              egress: { require_labels: {} },
              services: [{ name: "stream", type: "inference", description: "", target_url: backend.url, env: {} }],
            },
          })
          const a = yield* NodeHarness.make(cp, { overrides: { syncInterval: SLOW_SYNC } })
          yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
          const bId = yield* b.peerId
          const path = `/mesh/${bId}/inference/stream/echo`
          expect((yield* proxied(a, path)).status).toBe(200)
          const dbFlags = ["--db-driver", database.driver, "--db-dsn", Redacted.value(database.dsn)]

          const ban = yield* Effect.promise(() =>
            runBin("mesh-control-plane", ["admin", "ban", "--peer", bId, ...dbFlags]),
          )
          expect(ban.status, ban.stderr).toBe(0)
          expect(ban.stdout).toContain(`banned ${bId}`)
          expect(ban.stdout).toContain("a control plane running on this database announces it to routers and nodes")
          // A's own refusal is what counts. B may hear of its ban first and stop serving, and A then answers 502
          // "does not serve" for a moment before it hears too: on a loaded machine the two events can cross.
          const refused = yield* proxied(a, path).pipe(
            Effect.filterOrFail((answer) => answer.status !== 200 && answer.body.includes("banned")),
            Effect.retry(Schedule.spaced(Duration.millis(100))),
            Effect.timeout(BUDGET),
            Effect.timed,
            Effect.orDieWith(() => new Error("node A still reaches B 5 s after the CLI's ban")),
          )
          const [took, answer] = refused
          expect(answer.status).toBe(502)
          expect(answer.body).toContain("banned")
          console.info(`[${db.driver}] CLI ban reached node A ${Duration.toMillis(took)} ms after the command exited`)

          const unban = yield* Effect.promise(() =>
            runBin("mesh-control-plane", ["admin", "unban", "--peer", bId, ...dbFlags]),
          )
          expect(unban.status, unban.stderr).toBe(0)
          // Unbanned, B is reachable again without waiting for a sync: the connection to it is made anew.
          yield* proxied(a, path).pipe(
            Effect.filterOrFail((answer) => answer.status === 200),
            Effect.retry(Schedule.spaced(Duration.millis(200))),
            Effect.timeout(Duration.seconds(30)),
            Effect.orDieWith(() => new Error("node A does not reach B again after the CLI's unban")),
          )
        }),
      ),
    { timeout: 180_000 },
  )
})

import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Option, TestClock } from "effect"
import { Nodes } from "../../src/services/nodes/Nodes.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import { describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const HOUR = 3_600_000

describeDatabases("node retention", (db) => {
  it.scoped("an expired, unbanned record is deleted after the retention period; a banned one stays", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.hours(48) })
      const nodes = Context.get(cp.context, Nodes)
      const expiring = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR })
      const bannedExpiring = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR, banned: true })
      const lasting = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + 100 * HOUR })
      const present = (peerId: string) => Effect.map(nodes.find(peerId), Option.isSome)

      // Session over at T0+1h; retention 48h: still there at T0+48h, gone after T0+49h.
      yield* TestClock.adjust(Duration.hours(48))
      expect(yield* present(expiring.peer.peerId)).toBe(true)
      yield* TestClock.adjust(Duration.hours(2))
      yield* eventually(present(expiring.peer.peerId), (p) => !p, { what: "expired record deleted" })
      expect(yield* present(bannedExpiring.peer.peerId)).toBe(true)
      expect(yield* present(lasting.peer.peerId)).toBe(true)
    }),
  )

  it.scoped("retention 0 keeps every record", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.zero })
      const node = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR })
      yield* TestClock.adjust(Duration.hours(24 * 60))
      const nodes = Context.get(cp.context, Nodes)
      expect(Option.isSome(yield* nodes.find(node.peer.peerId))).toBe(true)
    }),
  )

  it.scoped("a sweep deletes thousands of records in batches", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.hours(1) })
      const { Retention } = yield* Effect.promise(() => import("../../src/services/nodes/Retention.js"))
      const { SqlClient } = yield* Effect.promise(() => import("@effect/sql"))
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      // 2500 stale records, written directly: more than two batches.
      yield* sql`INSERT INTO nodes ${sql.insert(
        Array.from({ length: 2500 }, (_, i) => ({
          peer_id: `stale-${i}`,
          public_key: Buffer.alloc(32),
          role: "mesh:role:node",
          labels_json: "{}",
          enrollment_type: "bootstrap",
          credential_digest: Buffer.alloc(0),
          credential_expires_at: T0 - 10 * HOUR,
          enrolled_at: T0 - 20 * HOUR,
        })),
      )}`
      const deleted = yield* Context.get(cp.context, Retention).sweep
      expect(deleted).toBe(2500)
      expect(yield* Context.get(cp.context, Nodes).count).toBe(0)
    }),
  )
})

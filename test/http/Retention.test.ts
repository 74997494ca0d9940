import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Option, TestClock, TestServices } from "effect"
import { Nodes } from "../../src/services/nodes/Nodes.js"
import { Retention } from "../../src/services/nodes/Retention.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import { describeDatabases } from "../support/databases.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const HOUR = 3_600_000

/** Moves the clock an hour at a time, waiting up to a second of real time after each, until `done`; the hours taken. */
const advanceHourlyUntil = (done: Effect.Effect<boolean>, maxHours: number) =>
  Effect.gen(function* () {
    for (let hours = 1; hours <= maxHours; hours++) {
      yield* TestClock.adjust(Duration.hours(1))
      for (let i = 0; i < 50; i++) {
        if (yield* done) return hours
        yield* TestServices.provideLive(Effect.sleep("20 millis"))
      }
    }
    return yield* Effect.dieMessage(`not done after ${maxHours} hours`)
  })

describeDatabases("node retention", (db) => {
  it.scoped("an expired, unbanned record is deleted after the retention period; a banned one stays", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.hours(48) })
      const nodes = Context.get(cp.context, Nodes)
      const retention = Context.get(cp.context, Retention)
      const expiring = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR })
      const bannedExpiring = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR, banned: true })
      const lasting = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + 100 * HOUR })
      const present = (peerId: string) => Effect.map(nodes.find(peerId), Option.isSome)

      // Session over at T0+1h; retention 48h: a sweep at T0+48h keeps it, one at T0+50h deletes it. The sweeps are
      // called here, not awaited from the hourly fiber, so the assertions do not race the fiber's real I/O.
      yield* TestClock.adjust(Duration.hours(48))
      yield* retention.sweep
      expect(yield* present(expiring.peer.peerId)).toBe(true)
      yield* TestClock.adjust(Duration.hours(2))
      yield* retention.sweep
      expect(yield* present(expiring.peer.peerId)).toBe(false)
      expect(yield* present(bannedExpiring.peer.peerId)).toBe(true)
      expect(yield* present(lasting.peer.peerId)).toBe(true)
    }),
  )

  it.scoped("the hourly sweep runs on its own", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.hours(1) })
      const nodes = Context.get(cp.context, Nodes)
      const expiring = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR })
      const gone = Effect.map(nodes.find(expiring.peer.peerId), Option.isNone)
      // Due after T0+2h. Each step moves the clock an hour and gives the woken sweep real time for its I/O; a sweep
      // still busy when the clock moves is woken by a later step, so the hour it lands on is not asserted exactly.
      const hours = yield* advanceHourlyUntil(gone, 24)
      expect(hours).toBeGreaterThanOrEqual(2)
    }),
  )

  it.scoped("retention 0 keeps every record", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.zero })
      // A control plane with retention on, on the same clock: once its hourly sweep has deleted its expired record,
      // the sweeps the same clock moves woke in the first one have had the same time to delete theirs.
      const control = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.hours(1) })
      const node = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + HOUR })
      const controlNode = yield* enrollDirectly(control, { sessionExpiresAt: T0 + HOUR })
      const nodes = Context.get(cp.context, Nodes)
      const controlGone = Effect.map(Context.get(control.context, Nodes).find(controlNode.peer.peerId), Option.isNone)
      yield* advanceHourlyUntil(controlGone, 24)
      expect(Option.isSome(yield* nodes.find(node.peer.peerId))).toBe(true)
      // A sweep called directly (what the fiber runs each hour) deletes nothing either.
      expect(yield* Context.get(cp.context, Retention).sweep).toBe(0)
      expect(Option.isSome(yield* nodes.find(node.peer.peerId))).toBe(true)
    }),
  )

  it.scoped("a sweep deletes thousands of records in batches", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, nodeRetention: Duration.hours(1) })
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

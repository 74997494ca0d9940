/**
 * Two replicas' KeyRings on one database, under TestClock. One replica's rotation attempt fails on a database error
 * while the other rotates: the loser must not keep signing with, and accepting, the key the winner retired.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Chunk, Context, Duration, Effect, Layer, Logger, TestClock } from "effect"
import * as ControlPlaneConfig from "../../src/config/ControlPlaneConfig.js"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import * as ControlPlaneLive from "../../src/layers/ControlPlaneLive.js"
import * as KeyRingLive from "../../src/layers/identity/KeyRingLive.js"
import { KeyRing } from "../../src/services/identity/KeyRing.js"
import { describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const INTERVAL = Duration.hours(24)
const GRACE = Duration.hours(1)

/** A replica's KeyRing with its own connection, and what it logs. */
const replica = (database: DatabaseConfig) =>
  Effect.gen(function* () {
    const logged: Array<string> = []
    const capture = Logger.make(({ message }) => {
      logged.push(String(message))
    })
    const settings = ControlPlaneConfig.make({
      issuers: ["http://127.0.0.1:1/unused"],
      database,
      keyRotationInterval: INTERVAL,
      keyGracePeriod: GRACE,
    })
    const context = yield* Layer.build(
      KeyRingLive.layer.pipe(
        Layer.provideMerge(ControlPlaneLive.database(settings)),
        Layer.provide(Layer.succeed(ControlPlaneConfig.ControlPlaneConfig, settings)),
        Layer.provide(Logger.replace(Logger.defaultLogger, capture)),
      ),
    )
    return {
      keyRing: Context.get(context, KeyRing),
      sql: Context.get(context, SqlClient.SqlClient),
      logged: Effect.sync(() => [...logged]),
    }
  })

describeDatabases("key rotation across replicas", (db) => {
  it.scoped("a replica whose attempt failed while another rotated re-reads the keys instead of sleeping", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const database = yield* db.freshShared
      const loser = yield* replica(database)
      const winner = yield* replica(database)
      const first = (yield* loser.keyRing.snapshot).current.id
      // Both rotation loops wait for the shared due time.
      const due = T0 + Duration.toMillis(INTERVAL)
      yield* eventually(TestClock.sleeps(), (s) => Chunk.filter(s, (at) => at === due).length === 2, {
        what: "both replicas wait for the rotation",
      })

      // The database fails the loser's attempt at the due time (its table is briefly gone)...
      yield* loser.sql`ALTER TABLE key_rotation RENAME TO key_rotation_away`
      yield* TestClock.adjust(INTERVAL)
      yield* eventually(loser.logged, (w) => w.includes("key rotation check failed; retrying"), {
        what: "the loser's attempt failed",
      })
      // ...then the other replica rotates.
      yield* loser.sql`ALTER TABLE key_rotation_away RENAME TO key_rotation`
      expect(yield* winner.keyRing.rotateIfDue).toBe(true)
      const rotated = (yield* winner.keyRing.snapshot).current.id
      expect(rotated).not.toBe(first)

      // Soon after its failure the loser signs with the new key, and once the grace is over it accepts the old no more.
      yield* TestClock.adjust(Duration.seconds(5))
      yield* eventually(loser.keyRing.snapshot, (s) => s.current.id === rotated, { what: "the loser re-read" })
      yield* TestClock.adjust(GRACE)
      const after = yield* loser.keyRing.snapshot
      expect([after.current.id, after.publicKeyFor(first)]).toEqual([rotated, undefined])
    }),
  )
})

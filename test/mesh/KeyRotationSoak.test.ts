/**
 * Key rotation over a simulated week (see soak.ts): with the default durations a mesh rotates its signing key every
 * day, and every member must move to the new key before the old one retires an hour later. Before members moved on
 * a new key, calls failed and nodes disconnected from the first rotation on. KeyRotationVariants.test.ts has the
 * cases where things go wrong.
 *
 * Why this long: seven rotations and retirements, with the credentials refreshed on their spread schedule, in
 * 10-minute steps (1,008 a database, four calls after each); about 100 s of one core a database. The step cannot be
 * longer: every 10 minutes of the week has work due (loops of 1 s to 5 minutes, 42 to 49 sleeps woken by each jump),
 * and a router's lease (15 minutes, renewed every 5) would lapse inside a longer jump. The calls are the measurement
 * and also the real time each step gives the woken fibers: with a call every hour instead, the nodes' reconnections
 * were cut short by the next jump and every node read as disconnected from the first rotation on.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, Random } from "effect"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import { describeDatabases } from "../support/databases.js"
import * as JumpClock from "../support/JumpClock.js"
import * as Soak from "./soak.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const STEP = Duration.minutes(10)
/** The spread of refreshes is random; a fixed seed makes a failure repeatable. */
const seeded = Effect.withRandom(Random.make("key-rotation-soak"))

describeDatabases("key rotation over a simulated week", (db) => {
  it.scoped(
    "with the default durations, no call fails and no node disconnects through seven rotations",
    () => {
      const clock = JumpClock.make(T0)
      return Effect.gen(function* () {
        const cp = yield* ControlPlaneHarness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
        const soak = yield* Soak.mesh(cp)
        const record = yield* Soak.run(clock, soak, Duration.days(7), STEP)
        expect(record).toEqual({ failures: [], disconnected: [] })
      }).pipe(seeded, Effect.withClock(clock))
    },
    { timeout: 15 * 60_000 },
  )
})

/**
 * Key rotation when things go wrong (see soak.ts and KeyRotationSoak.test.ts): every key_rotation event lost,
 * members spread over control-plane replicas, a node away across the old key's retirement.
 *
 * Why this long: each case covers the least simulated time that holds what it is about, in the soak's 10-minute
 * steps: two rotations without events (the second shows the first was no accident), two with replicas, and for the
 * node away, the day before the first rotation and the two hours across its retirement.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option, Random, Redacted, Scope } from "effect"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import { tokenHeader } from "../node/support.js"
import { admin } from "../support/admin.js"
import { describeDatabases, describePostgres } from "../support/databases.js"
import * as JumpClock from "../support/JumpClock.js"
import * as Soak from "./soak.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const STEP = Duration.minutes(10)
const TIMEOUT = { timeout: 15 * 60_000 }
/** The spread of refreshes is random; a fixed seed makes a failure repeatable. */
const seeded = Effect.withRandom(Random.make("key-rotation-soak"))
const clean = { failures: [], disconnected: [] }

/** A node started in its own scope, to be stopped and started again on the same data folder. */
const startNode = (cp: ControlPlaneHarness.ControlPlaneHarness, dataDir: string, token: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const node = yield* NodeHarness.make(cp, {
      overrides: {
        dataDir,
        socketPath: Option.some(`${dataDir}/mesh.sock`),
        bootstrapToken: Option.some(Redacted.make(token)),
      },
    }).pipe(Scope.extend(scope))
    return { node, stop: Scope.close(scope, Exit.void) }
  })

const readyz = (node: NodeHarness.NodeHarness) =>
  Effect.promise(() =>
    fetch(`${node.url}/readyz`, { headers: tokenHeader(node) }).then(
      (r) => r.json() as Promise<{ readonly mesh: string; readonly why?: string }>,
    ),
  )

/**
 * D, enrolled with a single-use token, goes offline half an hour before the first rotation and comes back two hours
 * later, after the old key retired; A keeps calling B and C meanwhile.
 */
const awayAcrossRotation = (database: DatabaseConfig, recovery: boolean) =>
  Effect.gen(function* () {
    const clock = JumpClock.make(T0)
    return yield* Effect.gen(function* () {
      const cp = yield* ControlPlaneHarness.make({ database, autoApproveEnrollment: true })
      const soak = yield* Soak.mesh(cp)
      const dataDir = yield* NodeHarness.tempDir
      const token = yield* NodeHarness.nodeToken(cp, { max_usages: 1 })
      const first = yield* startNode(cp, dataDir, token)
      yield* Soak.settle(first.node.connected.pipe(Effect.as(true)), "D connects")
      const d = yield* Soak.memberId(first.node)
      if (recovery) yield* admin(cp, "POST", `/admin/nodes/${d}/autonomous-recovery`, { enabled: true })
      const before = yield* Soak.run(clock, soak, Duration.minutes(23 * 60 + 30), STEP)
      yield* first.stop
      const away = yield* Soak.run(clock, soak, Duration.hours(2), STEP)
      const second = yield* startNode(cp, dataDir, token)
      return { before, away, second: second.node, d }
    }).pipe(Effect.withClock(clock))
  })

describeDatabases("key rotation without events", (db) => {
  it.scoped(
    "with every key_rotation event lost, the members' key syncs alone move them in time",
    () => {
      const clock = JumpClock.make(T0)
      return Effect.gen(function* () {
        const cp = yield* ControlPlaneHarness.make({
          database: yield* db.fresh,
          autoApproveEnrollment: true,
          events: "memory",
        })
        const soak = yield* Soak.mesh(cp)
        expect(yield* Soak.run(clock, soak, Duration.days(2), STEP)).toEqual(clean)
      }).pipe(seeded, Effect.withClock(clock))
    },
    TIMEOUT,
  )
})

describePostgres("key rotation across control-plane replicas", (url) => {
  it.scoped(
    "the router enrolled with one replica and the nodes with another move with the rotation either replica makes",
    () => {
      const clock = JumpClock.make(T0)
      return Effect.gen(function* () {
        const shared = yield* TestDatabase.fresh("postgres", url)
        const one = yield* ControlPlaneHarness.make({ database: shared, autoApproveEnrollment: true })
        const two = yield* ControlPlaneHarness.make({ database: shared, autoApproveEnrollment: true })
        const soak = yield* Soak.mesh(one, two)
        expect(yield* Soak.run(clock, soak, Duration.days(2), STEP)).toEqual(clean)
      }).pipe(seeded, Effect.withClock(clock))
    },
    TIMEOUT,
  )
})

describeDatabases("a node away across a key retirement", (db) => {
  it.scoped(
    "with autonomous recovery it trades its retired-key credential at start and rejoins on its own",
    () =>
      Effect.gen(function* () {
        const { before, away, second } = yield* awayAcrossRotation(yield* db.fresh, true)
        expect({ before, away }).toEqual({ before: clean, away: clean })
        yield* Soak.settle(second.lifecycle.connected, "D rejoins")
        expect((yield* readyz(second)).mesh).toBe("connected")
      }).pipe(seeded),
    TIMEOUT,
  )

  it.scoped(
    "without it, and with its token used up, it says why it cannot rejoin and what the operator can do",
    () =>
      Effect.gen(function* () {
        const { before, away, second } = yield* awayAcrossRotation(yield* db.fresh, false)
        expect({ before, away }).toEqual({ before: clean, away: clean })
        yield* Soak.settle(
          Effect.map(readyz(second), (r) => r.why !== undefined),
          "D reports why it cannot join",
        )
        const ready = yield* readyz(second)
        expect(ready.mesh).toBe("joining")
        expect(ready.why).toContain("the saved credential expired while this member was away")
        expect(ready.why).toContain("autonomous recovery")
        expect(ready.why).toContain("bootstrap token")
      }).pipe(seeded),
    TIMEOUT,
  )
})

import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, TestClock } from "effect"
import { KeyRing } from "../../src/services/identity/KeyRing.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { listKeys } from "../support/keys.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("signing key rotation", (db) => {
  it.scoped("a new key every interval; the old one is served through the grace period, then gone", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({
        database: yield* db.fresh,
        keyRotationInterval: Duration.hours(24),
        keyGracePeriod: Duration.hours(1),
        biscuitTtl: Duration.hours(48),
      })
      const [first] = yield* listKeys(cp.url)
      expect(yield* listKeys(cp.url)).toHaveLength(1)

      const plain = yield* enrollDirectly(cp)
      const recovering = yield* enrollDirectly(cp, { autonomousRecovery: true })

      yield* TestClock.adjust(Duration.hours(24))
      const rotated = yield* eventually(listKeys(cp.url), (keys) => keys.length === 2, {
        what: "two keys after one interval",
      })
      expect(rotated[0]).toEqual(first)

      // A node enrolled after the rotation holds a credential of the new key (RefreshGrace.test.ts refreshes one
      // of the previous key during the grace period).
      const stillFine = yield* enrollDirectly(cp)
      yield* TestClock.adjust(Duration.minutes(59))
      expect(yield* listKeys(cp.url)).toHaveLength(2)

      yield* TestClock.adjust(Duration.minutes(2))
      const after = yield* eventually(listKeys(cp.url), (keys) => keys.length === 1, { what: "old key gone" })
      expect(after[0]?.id).not.toBe(first?.id)

      // The old key is retired: its credentials neither verify nor refresh...
      const refused = yield* MeshClient.refresh(cp.url, plain.peer, plain.credential)
      expect(refused.status).toBe(401)
      expect(MeshClient.errorOf(refused)).toEqual({
        error: "unauthorized",
        message: "credential is signed by a retired key and the node is not opted in to autonomous recovery",
      })
      // ...except for a node opted in to autonomous recovery, which proves possession of its key instead.
      const recovered = yield* MeshClient.refresh(cp.url, recovering.peer, recovering.credential)
      const fresh = yield* MeshClient.decodeRefresh(recovered)
      const again = yield* MeshClient.refresh(cp.url, recovering.peer, fresh.biscuitToken)
      expect(again.status).toBe(200)
      // A credential minted under the new key is unaffected.
      expect((yield* MeshClient.refresh(cp.url, stillFine.peer, stillFine.credential)).status).toBe(200)
    }),
  )

  it.scoped("the operator's autonomous-recovery toggle decides whether a retired-key credential refreshes", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({
        database: yield* db.fresh,
        keyRotationInterval: Duration.hours(24),
        keyGracePeriod: Duration.hours(1),
        biscuitTtl: Duration.hours(48),
      })
      const [first] = yield* listKeys(cp.url)
      const enabled = yield* enrollDirectly(cp)
      const disabled = yield* enrollDirectly(cp)
      const toggle = (peerId: string, on: boolean) =>
        Effect.map(admin(cp, "POST", `/admin/nodes/${peerId}/autonomous-recovery`, { enabled: on }), (a) => a.json)
      expect(yield* toggle(enabled.peer.peerId, true)).toEqual({
        peer_id: enabled.peer.peerId,
        autonomous_recovery: true,
      })
      // Switched on, then off again: the last word counts.
      yield* toggle(disabled.peer.peerId, true)
      expect(yield* toggle(disabled.peer.peerId, false)).toEqual({
        peer_id: disabled.peer.peerId,
        autonomous_recovery: false,
      })

      // Retire the key both credentials are signed with.
      yield* TestClock.adjust(Duration.hours(24))
      yield* eventually(listKeys(cp.url), (keys) => keys.length === 2, { what: "rotated" })
      yield* TestClock.adjust(Duration.minutes(61))
      yield* eventually(listKeys(cp.url), (keys) => keys.every((k) => k.id !== first?.id), { what: "old key gone" })

      const recovered = yield* MeshClient.refresh(cp.url, enabled.peer, enabled.credential)
      expect(recovered.status).toBe(200)
      const refused = yield* MeshClient.refresh(cp.url, disabled.peer, disabled.credential)
      expect(refused.status).toBe(401)
      expect(MeshClient.errorOf(refused)).toEqual({
        error: "unauthorized",
        message: "credential is signed by a retired key and the node is not opted in to autonomous recovery",
      })
    }),
  )

  it.scoped("rotation 0 keeps one key forever", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, keyRotationInterval: Duration.zero })
      // A control plane that does rotate, on the same clock: once its rotation, woken by the same clock move, has
      // landed, a rotation the first one wrongly made would have had the same time to land.
      const control = yield* Harness.make({
        database: yield* db.fresh,
        keyRotationInterval: Duration.hours(24),
        keyGracePeriod: Duration.hours(1),
      })
      const before = yield* listKeys(cp.url)
      const [controlFirst] = yield* listKeys(control.url)
      yield* TestClock.adjust(Duration.hours(24 * 10))
      yield* TestClock.adjust(Duration.minutes(5))
      yield* eventually(listKeys(control.url), (keys) => keys.every((k) => k.id !== controlFirst?.id), {
        what: "the control plane with rotation on rotated",
        timeoutMs: 30_000,
      })
      expect(yield* listKeys(cp.url)).toEqual(before)
      // What the rotation fiber would do when woken does nothing either.
      expect(yield* Context.get(cp.context, KeyRing).rotateIfDue).toBe(false)
      expect(yield* listKeys(cp.url)).toEqual(before)
    }),
  )
})

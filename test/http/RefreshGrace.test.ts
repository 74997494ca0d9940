/**
 * A credential signed by the previous key, refreshed during the grace period, is traded for one signed by the new
 * key; after the grace period the previous key is retired and such a credential is refused, unless the node has
 * autonomous recovery. Which key signed a credential is read from the credential itself, checked against /keys.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, Either, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { type DriverUnderTest, describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { listKeys } from "../support/keys.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

/** The id of the key in /keys that signed `credential`; undefined when no published key verifies it. */
const signerOf = (cp: Harness.ControlPlaneHarness, credential: Uint8Array) =>
  Effect.map(listKeys(cp.url), (keys) => {
    const byId = new Map(keys.map((k) => [k.id, Buffer.from(k.publicKey, "hex")]))
    const verified = Biscuit.verify(credential, (id) => byId.get(id), T0, { allowExpired: true })
    return Either.match(verified, { onLeft: () => undefined, onRight: (v) => v.keyId })
  })

const rotating = (db: DriverUnderTest) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    // Credentials outlive the rotation interval, so only the key decides what refreshes.
    return yield* Harness.make({
      database: yield* db.fresh,
      keyRotationInterval: Duration.hours(24),
      keyGracePeriod: Duration.hours(1),
      biscuitTtl: Duration.hours(48),
    })
  })

/** Advances to the first rotation and waits until the control plane has performed it. */
const rotate = (cp: Harness.ControlPlaneHarness) =>
  Effect.gen(function* () {
    yield* TestClock.adjust(Duration.hours(24))
    return yield* eventually(listKeys(cp.url), (keys) => keys.length === 2, { what: "a second key after rotation" })
  })

describeDatabases("refreshing across a key rotation", (db) => {
  it.scoped("during the grace period a credential signed by the previous key refreshes to one of the new key", () =>
    Effect.gen(function* () {
      const cp = yield* rotating(db)
      const [previous] = yield* listKeys(cp.url)
      const node = yield* enrollDirectly(cp)
      expect(yield* signerOf(cp, node.credential)).toBe(previous?.id)

      const keys = yield* rotate(cp)
      const next = keys.find((k) => k.id !== previous?.id)
      expect(next).toBeDefined()
      // Still signed by the previous key, which is now in its grace period.
      expect(yield* signerOf(cp, node.credential)).toBe(previous?.id)

      yield* TestClock.adjust(Duration.minutes(59))
      expect(yield* listKeys(cp.url)).toHaveLength(2)
      const refreshed = yield* MeshClient.decodeRefresh(yield* MeshClient.refresh(cp.url, node.peer, node.credential))
      expect(yield* signerOf(cp, refreshed.biscuitToken)).toBe(next?.id)

      // Past the grace period the refreshed credential is the one that counts, and it still refreshes.
      yield* TestClock.adjust(Duration.minutes(2))
      yield* eventually(listKeys(cp.url), (k) => k.length === 1, { what: "previous key retired" })
      expect((yield* MeshClient.refresh(cp.url, node.peer, refreshed.biscuitToken)).status).toBe(200)
    }),
  )

  it.scoped("after the grace period it is refused, unless the node has autonomous recovery", () =>
    Effect.gen(function* () {
      const cp = yield* rotating(db)
      const [previous] = yield* listKeys(cp.url)
      const plain = yield* enrollDirectly(cp)
      const recovering = yield* enrollDirectly(cp, { autonomousRecovery: true })
      yield* rotate(cp)
      yield* TestClock.adjust(Duration.minutes(61))
      yield* eventually(listKeys(cp.url), (k) => k.length === 1 && k[0]?.id !== previous?.id, {
        what: "previous key retired",
      })
      expect(yield* signerOf(cp, plain.credential)).toBeUndefined()

      const refused = yield* MeshClient.refresh(cp.url, plain.peer, plain.credential)
      expect([refused.status, MeshClient.errorOf(refused)]).toEqual([
        401,
        {
          error: "unauthorized",
          message: "credential is signed by a retired key and the node is not opted in to autonomous recovery",
        },
      ])
      const recovered = yield* MeshClient.decodeRefresh(
        yield* MeshClient.refresh(cp.url, recovering.peer, recovering.credential),
      )
      const [current] = yield* listKeys(cp.url)
      expect(yield* signerOf(cp, recovered.biscuitToken)).toBe(current?.id)
    }),
  )
})

import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, TestClock } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import { admin } from "../support/admin.js"
import { describePostgres } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { listKeys } from "../support/keys.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describePostgres("two control planes on one database", (url) => {
  it.scoped("rotate exactly once per interval and serve the same key set", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const database = yield* TestDatabase.postgresSchema(url)
      const settings = { database, keyRotationInterval: Duration.hours(24), keyGracePeriod: Duration.hours(1) }
      const [a, b] = yield* Effect.all([Harness.make(settings), Harness.make(settings)], { concurrency: 2 })

      const sameKeys = Effect.zip(listKeys(a.url), listKeys(b.url))
      const [startA, startB] = yield* sameKeys
      expect(startA).toHaveLength(1)
      expect(startB).toEqual(startA)

      for (let interval = 1; interval <= 3; interval++) {
        yield* TestClock.adjust(Duration.hours(24))
        const [keysA, keysB] = yield* eventually(
          sameKeys,
          ([ka, kb]) => ka.length === 2 && kb.length === 2 && ka[1]?.id === kb[1]?.id,
          { what: `both replicas see rotation ${interval}` },
        )
        expect(keysB).toEqual(keysA)
      }
      const sql = Context.get(a.context, SqlClient.SqlClient)
      const [newest] = yield* sql<{ n: number }>`SELECT MAX(id) AS n FROM signing_keys`
      // Ids are a sequence: four keys made in all, the first and one per interval.
      expect(Number(newest?.n)).toBe((startA[0]?.id ?? Number.NaN) + 3)
    }),
  )
})

describePostgres("replicas hear each other's changes", (url) => {
  it.scoped("a ban made through one replica is on the other's /info at once, not when its cache ages out", () =>
    Effect.gen(function* () {
      // The clock stands still: a cached /info never ages out, so only the notification can refresh it.
      yield* TestClock.setTime(T0)
      const database = yield* TestDatabase.postgresSchema(url)
      const [a, b] = yield* Effect.all([Harness.make({ database }), Harness.make({ database })], { concurrency: 2 })
      const node = yield* enrollDirectly(a)
      const bannedOnB = Effect.map(MeshClient.info(b.url), (info) => info.bannedPeerIds.includes(node.peer.peerId))
      expect(yield* bannedOnB).toBe(false)
      const banned = yield* admin(a, "POST", "/admin/revoke", { peer_id: node.peer.peerId })
      expect(banned.status).toBe(200)
      yield* eventually(bannedOnB, (listed) => listed, { what: "replica B lists the ban" })
    }),
  )
})

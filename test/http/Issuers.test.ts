import { expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("policy members with several issuers", (db) => {
  it.scoped("a member names its issuer; an unqualified one names the first issuer only", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const first = yield* DevOidcIssuer.make()
      const weaker = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [first.url, weaker.url] })
      yield* setPolicy(cp, {
        roles: [{ name: "mesh:role:node" }, { name: "mesh:role:admin" }],
        bindings: [
          { role: "mesh:role:node", members: ["user:alice", "email:*@example.com", `group:${weaker.url}|ops`] },
          { role: "mesh:role:admin", members: ["user:root"] },
        ],
      })
      const register = (token: string) =>
        Effect.map(MeshClient.register(cp.url, PeerKey.generate(), token), (a) => a.status)

      // The same subject, email or group at the weaker issuer inherits nothing bound at the first.
      expect(yield* register(yield* first.mint({ sub: "alice" }))).toBe(200)
      expect(yield* register(yield* weaker.mint({ sub: "alice" }))).toBe(403)
      expect(yield* register(yield* first.mint({ sub: "carol", email: "carol@example.com" }))).toBe(200)
      expect(yield* register(yield* weaker.mint({ sub: "carol", email: "carol@example.com" }))).toBe(403)
      // A qualified member binds at its own issuer only.
      expect(yield* register(yield* weaker.mint({ sub: "dave", groups: ["ops"] }))).toBe(200)
      expect(yield* register(yield* first.mint({ sub: "dave", groups: ["ops"] }))).toBe(403)

      const adminOf = (token: string) =>
        Effect.map(
          MeshClient.json(cp.url, "GET", "/user/status", token),
          (a) => (a.json as { user: { admin: boolean } }).user.admin,
        )
      expect(yield* adminOf(yield* first.mint({ sub: "root" }))).toBe(true)
      expect(yield* adminOf(yield* weaker.mint({ sub: "root" }))).toBe(false)
    }),
  )

  it.scoped("a member qualified with an issuer that is not configured is refused", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const first = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [first.url] })
      const answer = yield* admin(cp, "POST", "/policies", {
        roles: [{ name: "mesh:role:node" }],
        bindings: [{ role: "mesh:role:node", members: ["user:https://elsewhere.example|alice"] }],
      })
      expect([answer.status, answer.json]).toEqual([
        400,
        {
          error: "bad_request",
          message:
            'invalid policy: bindings[0].members[0]: member "user:https://elsewhere.example|alice" names issuer "https://elsewhere.example", which is not configured',
        },
      ])
      // With one issuer both spellings mean the same.
      yield* setPolicy(cp, {
        roles: [{ name: "mesh:role:node" }],
        bindings: [{ role: "mesh:role:node", members: [`user:${first.url}/|alice`, "user:bob"] }],
      })
      for (const sub of ["alice", "bob"]) {
        expect((yield* MeshClient.register(cp.url, PeerKey.generate(), yield* first.mint({ sub }))).status).toBe(200)
      }
    }),
  )
})

import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken, setPolicy } from "../support/admin.js"
import { type DriverUnderTest, describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const policy = {
  roles: [{ name: "mesh:role:node" }],
  bindings: [{ role: "mesh:role:node", members: ["user:frank"] }],
}

const setup = (db: DriverUnderTest) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const issuer = yield* DevOidcIssuer.make()
    const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url], autoApproveEnrollment: true })
    yield* setPolicy(cp, policy)
    return { issuer, cp }
  })

describeDatabases("enrolling again through /enroll", (db) => {
  it.scoped("an OIDC node is refused: it refreshes or registers again", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      const peer = PeerKey.generate()
      expect((yield* MeshClient.register(cp.url, peer, yield* issuer.mint({ sub: "frank" }))).status).toBe(200)
      const token = yield* mintToken(cp)
      const answer = yield* MeshClient.enroll(cp.url, peer, token.token)
      expect([answer.status, MeshClient.errorOf(answer).message]).toEqual([
        403,
        "node is enrolled through OIDC; refresh or register again",
      ])
      const tokens = yield* admin(cp, "GET", "/admin/bootstrap-tokens")
      expect(tokens.json).toMatchObject([{ usages_count: 0, state: "active" }])
    }),
  )

  it.scoped("a used-up token whose owner is banned is disabled: the approved peer is refused", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      const frank = yield* issuer.mint({ sub: "frank" })
      const laptop = PeerKey.generate()
      expect((yield* MeshClient.register(cp.url, laptop, frank)).status).toBe(200)
      const minted = yield* MeshClient.json(cp.url, "POST", "/user/bootstrap-tokens", frank, { max_usages: 1 })
      const secret = (minted.json as { token: string }).token
      const peer = PeerKey.generate()
      expect((yield* MeshClient.enroll(cp.url, peer, secret)).status).toBe(200)

      // The token is used up; then its owner is banned.
      yield* admin(cp, "POST", "/admin/revoke", { peer_id: laptop.peerId })
      yield* TestClock.adjust(Duration.seconds(1))
      const again = yield* MeshClient.enroll(cp.url, peer, secret)
      expect([again.status, MeshClient.errorOf(again).message]).toEqual([
        403,
        "the owner of the bootstrap token is banned",
      ])
      const tokens = yield* admin(cp, "GET", "/admin/bootstrap-tokens")
      expect(tokens.json).toMatchObject([{ usages_count: 1, state: "disabled" }])
    }),
  )
})

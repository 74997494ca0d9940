import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollRequestSchema } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const policy = {
  roles: [{ name: "mesh:role:node", allowedLabels: ["team=*"] }, { name: "mesh:role:admin" }],
  bindings: [
    { role: "mesh:role:node", members: ["group:engineering", "email:*@example.com"] },
    { role: "mesh:role:admin", members: ["user:root"] },
  ],
}

const setup = (db: {
  fresh: Effect.Effect<import("../../src/config/DatabaseConfig.js").DatabaseConfig, Error, import("effect").Scope.Scope>
}) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const issuer = yield* DevOidcIssuer.make()
    const cp = yield* Harness.make({
      database: yield* db.fresh,
      issuers: [issuer.url],
      biscuitTtl: Duration.hours(24),
      oidcSessionTtl: Duration.hours(72),
    })
    return { issuer, cp }
  })

describeDatabases("OIDC registration", (db) => {
  it.scoped("a new control plane grants nothing: with no policy every identity is refused", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      const token = yield* issuer.mint({ sub: "alice", groups: ["engineering"] })
      const answer = yield* MeshClient.register(cp.url, PeerKey.generate(), token)
      expect([answer.status, MeshClient.errorOf(answer).message]).toEqual([
        403,
        'role "mesh:role:node" is not bound to this identity',
      ])
    }),
  )

  it.scoped("a bound identity enrolls; its credential never outlives the ID token", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      yield* setPolicy(cp, policy)
      const idToken = yield* issuer.mint(
        { sub: "alice", email: "alice@example.com", groups: ["engineering"] },
        { expiresInSeconds: 3600 },
      )
      const peer = PeerKey.generate()
      const answer = yield* MeshClient.register(cp.url, peer, idToken, { labels: { team: "infra" } })
      expect(answer.headers.get("cache-control")).toBe("no-store")
      const enrolled = yield* MeshClient.decodeRegister(answer)
      expect(Number(enrolled.expireTime?.seconds) * 1000).toBe(T0 + 3_600_000)
      expect(enrolled.controlPlanePublicKey.length).toBe(32)

      // Refresh keeps working within the session, now capped by the session, not the (gone) ID token.
      yield* TestClock.adjust(Duration.minutes(30))
      const refreshed = yield* MeshClient.decodeRefresh(yield* MeshClient.refresh(cp.url, peer, enrolled.biscuitToken))
      expect(Number(refreshed.expireTime?.seconds) * 1000).toBe(T0 + 30 * 60_000 + 24 * 3_600_000)
      yield* TestClock.adjust(Duration.hours(72))
      const expired = yield* MeshClient.refresh(cp.url, peer, refreshed.biscuitToken)
      expect([expired.status, MeshClient.errorOf(expired).message]).toEqual([
        401,
        "session expired; enroll again interactively",
      ])
    }),
  )

  it.scoped("an unbound identity gets 403; a bad token 401; labels outside the role 403", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      yield* setPolicy(cp, policy)
      const outcome = (idToken: string, labels: Record<string, string> = {}) =>
        Effect.map(MeshClient.register(cp.url, PeerKey.generate(), idToken, { labels }), (a) => [
          a.status,
          MeshClient.errorOf(a).message,
        ])

      expect(yield* outcome(yield* issuer.mint({ sub: "mallory", email: "mallory@evil.test" }))).toEqual([
        403,
        'role "mesh:role:node" is not bound to this identity',
      ])
      expect(yield* outcome(yield* issuer.mint({ sub: "bob", groups: ["engineering"], aud: "someone-else" }))).toEqual([
        401,
        "ID token validation failed: audience not allowed",
      ])
      expect(yield* outcome(yield* issuer.mint({ sub: "bob", groups: ["engineering"] }, { foreignKey: true }))).toEqual(
        [401, "ID token validation failed: signature or key not recognised"],
      )
      const old = yield* issuer.mint({ sub: "bob", groups: ["engineering"] }, { expiresInSeconds: 60 })
      yield* TestClock.adjust(Duration.minutes(2))
      expect(yield* outcome(old)).toEqual([401, "ID token validation failed: expired"])
      expect(yield* outcome(yield* issuer.mint({ sub: "bob", groups: ["engineering"] }), { zone: "eu" })).toEqual([
        403,
        "label not permitted: zone=eu",
      ])
      expect(yield* outcome("not-a-jwt")).toEqual([401, "ID token validation failed: malformed"])
    }),
  )

  it.scoped("refresh stops when the policy no longer binds the role", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      yield* setPolicy(cp, policy)
      const peer = PeerKey.generate()
      const idToken = yield* issuer.mint({ sub: "carol", groups: ["engineering"] })
      const enrolled = yield* MeshClient.decodeRegister(yield* MeshClient.register(cp.url, peer, idToken))
      yield* setPolicy(cp, { roles: policy.roles, bindings: [{ role: "mesh:role:admin", members: ["user:root"] }] })
      const answer = yield* MeshClient.refresh(cp.url, peer, enrolled.biscuitToken)
      expect([answer.status, MeshClient.errorOf(answer).message]).toEqual([
        403,
        'role "mesh:role:node" is no longer bound to this identity',
      ])
    }),
  )
})

describeDatabases("user API", (db) => {
  it.scoped("status lists the caller's own nodes and tokens; revoke bans only the caller's nodes", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      yield* setPolicy(cp, policy)
      const alice = yield* issuer.mint({ sub: "alice", email: "alice@example.com" })
      const bob = yield* issuer.mint({ sub: "bob", email: "bob@example.com" })
      const alicePeer = PeerKey.generate()
      const bobPeer = PeerKey.generate()
      yield* MeshClient.register(cp.url, alicePeer, alice)
      yield* MeshClient.register(cp.url, bobPeer, bob)

      const minted = yield* MeshClient.json(cp.url, "POST", "/user/bootstrap-tokens", alice, {
        description: "ci runner",
      })
      expect(minted.status).toBe(201)
      expect(minted.json).toMatchObject({ role: "mesh:role:node", owner: `${issuer.url}|alice` })

      const status = yield* MeshClient.json(cp.url, "GET", "/user/status", alice)
      expect(status.headers.get("cache-control")).toBe("no-store")
      expect(status.json).toMatchObject({
        user: { subject: "alice", email: "alice@example.com", admin: false },
        nodes: [{ peer_id: alicePeer.peerId, state: "admitted", enrollment_type: "oidc" }],
        bootstrap_tokens: [{ description: "ci runner", state: "active" }],
      })
      expect(JSON.stringify(status.json)).not.toContain(bobPeer.peerId)

      const notMine = yield* MeshClient.json(cp.url, "POST", "/user/revoke", alice, { peer_id: bobPeer.peerId })
      expect([notMine.status, notMine.json]).toEqual([403, { error: "forbidden", message: "you do not own this node" }])
      const mine = yield* MeshClient.json(cp.url, "POST", "/user/revoke", alice, { peer_id: alicePeer.peerId })
      expect(mine.json).toEqual({ peer_id: alicePeer.peerId, banned: true })
      // The identity is banned with the node: the user API and a fresh key are refused now.
      const after = yield* MeshClient.json(cp.url, "GET", "/user/status", alice)
      expect([after.status, after.json]).toEqual([403, { error: "forbidden", message: "identity is banned" }])
      const fresh = yield* MeshClient.register(cp.url, PeerKey.generate(), alice)
      expect([fresh.status, MeshClient.errorOf(fresh).message]).toEqual([403, "identity is banned"])
    }),
  )

  it.scoped("a token minted by a user stops working when the user is banned", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)

      yield* setPolicy(cp, policy)

      const frank = yield* issuer.mint({ sub: "frank", email: "frank@example.com" })

      const laptop = PeerKey.generate()

      yield* MeshClient.register(cp.url, laptop, frank)

      const minted = yield* MeshClient.json(cp.url, "POST", "/user/bootstrap-tokens", frank, { max_usages: 5 })

      const secret = (minted.json as { token: string }).token

      expect((yield* MeshClient.enroll(cp.url, PeerKey.generate(), secret)).status).toBe(200)

      yield* MeshClient.json(cp.url, "POST", "/user/revoke", frank, { peer_id: laptop.peerId })

      const after = yield* MeshClient.enroll(cp.url, PeerKey.generate(), secret)

      expect([after.status, MeshClient.errorOf(after).message]).toEqual([
        403,
        "the owner of the bootstrap token is banned",
      ])
    }),
  )

  it.scoped("a replayed registration is refused", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)

      yield* setPolicy(cp, policy)

      const peer = PeerKey.generate()

      const proof = yield* MeshClient.challenge(peer, "register")

      const body = {
        ...proof,

        jwt: yield* issuer.mint({ sub: "gina", groups: ["engineering"] }),

        peerId: peer.peerId,

        publicKey: PeerKey.toProtobuf(peer.publicKey),

        requestedRole: "mesh:role:node",
      }

      expect((yield* MeshClient.postProto(`${cp.url}/register`, EnrollRequestSchema, body)).status).toBe(200)

      const replay = yield* MeshClient.postProto(`${cp.url}/register`, EnrollRequestSchema, body)

      expect([replay.status, MeshClient.errorOf(replay).message]).toEqual([401, "challenge was already used"])
    }),
  )

  it.scoped("users mint node tokens only, within limits; admins by policy may mint more", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      yield* setPolicy(cp, policy)
      const user = yield* issuer.mint({ sub: "dave", email: "dave@example.com" })
      const root = yield* issuer.mint({ sub: "root" })
      const call = (token: string, body: unknown) =>
        Effect.map(MeshClient.json(cp.url, "POST", "/user/bootstrap-tokens", token, body), (a) => a.status)
      expect(yield* call(user, { role: "mesh:role:router" })).toBe(403)
      expect(yield* call(user, { autonomous_recovery: true })).toBe(403)
      expect(yield* call(user, { max_usages: 11 })).toBe(400)
      expect(yield* call(user, { ttl_hours: 169 })).toBe(400)
      expect(yield* call(root, { role: "mesh:role:router", autonomous_recovery: true, max_usages: 20 })).toBe(201)
      expect((yield* MeshClient.request(`${cp.url}/user/status`)).status).toBe(401)
    }),
  )

  it.scoped("an identity the policy binds to no role mints nothing: a new control plane grants nothing", () =>
    Effect.gen(function* () {
      const { issuer, cp } = yield* setup(db)
      const mint = (token: string) => MeshClient.json(cp.url, "POST", "/user/bootstrap-tokens", token, {})
      const alice = yield* issuer.mint({ sub: "alice", groups: ["engineering"] })
      const refused = yield* mint(alice)
      expect([refused.status, refused.json]).toEqual([
        403,
        { error: "forbidden", message: 'role "mesh:role:node" is not bound to this identity' },
      ])
      yield* setPolicy(cp, policy)
      expect((yield* mint(alice)).status).toBe(201)
      // Bound to nothing the token would grant: refused even with a policy in place.
      expect((yield* mint(yield* issuer.mint({ sub: "mallory" }))).status).toBe(403)
      expect((yield* admin(cp, "GET", "/admin/bootstrap-tokens")).json).toHaveLength(1)
    }),
  )
})

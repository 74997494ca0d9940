import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Either, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as KeySet from "../../src/domain/KeySet.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { BootstrapEnrollRequestSchema, EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("bootstrap enrollment", (db) => {
  it.scoped(
    "token → PENDING → poll → approve → APPROVED with a credential that verifies → re-enroll without approval",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(T0)
        const cp = yield* Harness.make({ database: yield* db.fresh })
        const token = yield* mintToken(cp, { description: "laptop" })
        expect(token.token).toMatch(/^mesh-bt-[0-9a-f]{32}$/)
        expect(token.expires_at).toBe(new Date(T0 + 24 * 3_600_000).toISOString())

        const peer = PeerKey.generate()
        const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
        expect(queued.status).toBe(EnrollmentStatus.PENDING)
        expect(queued.pollIntervalSeconds).toBe(30)
        expect(queued.biscuitToken.length).toBe(0)

        const stillPending = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
        expect(stillPending.status).toBe(EnrollmentStatus.PENDING)

        const listed = yield* admin(cp, "GET", "/admin/enrollments")
        expect(listed.json).toMatchObject([
          { id: queued.requestId, peer_id: peer.peerId, status: "pending", token_id: token.id },
        ])

        const approved = yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)
        expect(approved.status).toBe(200)
        expect(approved.json).toMatchObject({ status: "approved", resolved_by: "operator" })

        // A fresh proof: each poll's challenge is single-use.
        yield* TestClock.adjust(Duration.seconds(1))
        const answer = yield* MeshClient.enrollStatus(cp.url, peer)
        expect(answer.headers.get("cache-control")).toBe("no-store")
        const done = yield* MeshClient.decodeEnroll(answer)
        expect(done.status).toBe(EnrollmentStatus.APPROVED)
        // The credential verifies against the control plane's published keys, for this peer.
        const keys = Either.getOrThrow(
          KeySet.verify((yield* MeshClient.request(`${cp.url}/keys`)).body, [done.controlPlanePublicKey], T0),
        )
        const verified = Biscuit.verify(done.biscuitToken, (id) => keys.find((k) => k.id === id)?.publicKey, T0)
        expect(Either.map(verified, (v) => [v.facts.peerId, v.facts.role])).toEqual(
          Either.right([peer.peerId, "mesh:role:node"]),
        )

        // The token is spent (max_usages 1), yet the approved peer enrolls again without approval.
        yield* TestClock.adjust(Duration.seconds(1))
        const again = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
        expect(again.status).toBe(EnrollmentStatus.APPROVED)
        expect(again.biscuitToken.length).toBeGreaterThan(0)
        // ...and that credential is now the current one: it refreshes.
        expect((yield* MeshClient.refresh(cp.url, peer, again.biscuitToken)).status).toBe(200)

        // Another peer cannot use the spent token.
        const late = yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token)
        expect([late.status, MeshClient.errorOf(late)]).toEqual([
          410,
          { error: "gone", message: "bootstrap token has no usages left" },
        ])
        const tokens = yield* admin(cp, "GET", "/admin/bootstrap-tokens")
        expect(tokens.json).toMatchObject([
          { id: token.id, usages_count: 1, state: "exhausted", description: "laptop" },
        ])
        expect(JSON.stringify(tokens.json)).not.toContain(token.token)
      }),
  )

  it.scoped("auto-approve: 200 concurrent enrollments on a token with 50 usages admit exactly 50", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const token = yield* mintToken(cp, { max_usages: 50 })
      const answers = yield* Effect.all(
        Array.from({ length: 200 }, () => MeshClient.enroll(cp.url, PeerKey.generate(), token.token)),
        { concurrency: "unbounded" },
      )
      const statuses = answers.map((a) => a.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(50)
      expect(statuses.filter((s) => s === 410)).toHaveLength(150)
      for (const a of answers.filter((x) => x.status === 200)) {
        expect((yield* MeshClient.decodeEnroll(a)).status).toBe(EnrollmentStatus.APPROVED)
      }
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      const [counts] = yield* sql<{ usages: number; nodes: number }>`SELECT
        (SELECT usages_count FROM bootstrap_tokens WHERE id = ${token.id}) AS usages,
        (SELECT COUNT(*) FROM nodes) AS nodes`
      expect(counts).toEqual({ usages: 50, nodes: 50 })
    }),
  )

  it.scoped("approve and reject racing on one request: one wins, the other gets 409", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token))
      const [a, r] = yield* Effect.all(
        [
          admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`),
          admin(cp, "POST", `/admin/enrollments/${queued.requestId}/reject`),
        ],
        { concurrency: 2 },
      )
      expect([a.status, r.status].sort()).toEqual([200, 409])
      const loser = a.status === 409 ? a : r
      expect(loser.json).toEqual({ error: "conflict", message: "enrollment request is already resolved" })
      const again = yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)
      expect(again.status).toBe(409)
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      const [row] = yield* sql<{ usages: number; nodes: number }>`SELECT
        (SELECT usages_count FROM bootstrap_tokens WHERE id = ${token.id}) AS usages,
        (SELECT COUNT(*) FROM nodes) AS nodes`
      expect(row).toEqual(a.status === 200 ? { usages: 1, nodes: 1 } : { usages: 0, nodes: 0 })
    }),
  )

  it.scoped("labels must lie within the role's allowed_labels; none are allowed without a policy", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const token = yield* mintToken(cp, { max_usages: 5 })
      const refused = yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token, { labels: { zone: "eu" } })
      expect([refused.status, MeshClient.errorOf(refused).message]).toEqual([403, "label not permitted: zone=eu"])

      yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*", "tier=gold"] }] })
      const ok = yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token, {
        labels: { zone: "eu", tier: "gold" },
      })
      expect(ok.status).toBe(200)
      const bad = yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token, { labels: { tier: "silver" } })
      expect(MeshClient.errorOf(bad).message).toBe("label not permitted: tier=silver")
      const malformed = yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token, {
        labels: { "bad key": "x" },
      })
      expect(malformed.status).toBe(400)
    }),
  )

  it.scoped("refuses bad tokens, roles and proofs with the right status", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const token = yield* mintToken(cp, { max_usages: 10, ttl_hours: 1 })
      const status = (answer: MeshClient.Answer) => [answer.status, MeshClient.errorOf(answer).message]

      expect(
        status(yield* MeshClient.enroll(cp.url, PeerKey.generate(), "mesh-bt-00000000000000000000000000000000")),
      ).toEqual([401, "bootstrap token is not valid"])
      expect(
        status(yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token, { role: "mesh:role:router" })),
      ).toEqual([403, 'bootstrap token does not grant role "mesh:role:router"'])
      expect(
        status(yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token, { atMs: T0 - 6 * 60_000 })),
      ).toEqual([401, "stale or invalid challenge timestamp"])
      // Revoking is repeatable, and the token stays listed as revoked.
      expect((yield* admin(cp, "DELETE", `/admin/bootstrap-tokens/${token.id}`)).json).toMatchObject({
        state: "revoked",
        revoked: true,
      })
      expect((yield* admin(cp, "DELETE", `/admin/bootstrap-tokens/${token.id}`)).status).toBe(200)
      expect((yield* admin(cp, "DELETE", "/admin/bootstrap-tokens/bt_nope")).status).toBe(404)
      expect(status(yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token))).toEqual([
        410,
        "bootstrap token has been revoked",
      ])

      const expiring = yield* mintToken(cp, { ttl_hours: 1 })
      yield* TestClock.adjust(Duration.hours(2))
      expect(status(yield* MeshClient.enroll(cp.url, PeerKey.generate(), expiring.token))).toEqual([
        410,
        "bootstrap token has expired",
      ])
    }),
  )

  it.scoped("a replayed enrollment request is refused, on every replica of the database", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)

      const database = yield* db.freshShared

      const cp = yield* Harness.make({ database, autoApproveEnrollment: true })

      const other = yield* Harness.make({ database, autoApproveEnrollment: true })

      const token = yield* mintToken(cp, { max_usages: 5 })

      const peer = PeerKey.generate()

      const proof = yield* MeshClient.challenge(peer, "enroll")

      const body = {
        ...proof,

        bootstrapToken: token.token,

        peerId: peer.peerId,

        publicKey: PeerKey.toProtobuf(peer.publicKey),
      }

      const first = yield* MeshClient.postProto(`${cp.url}/enroll`, BootstrapEnrollRequestSchema, body)

      expect(first.status).toBe(200)

      for (const url of [cp.url, other.url]) {
        const replay = yield* MeshClient.postProto(`${url}/enroll`, BootstrapEnrollRequestSchema, body)

        expect([replay.status, MeshClient.errorOf(replay).message]).toEqual([401, "challenge was already used"])
      }
    }),
  )

  it.scoped("enroll/status answers 401 to every authentication failure", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      yield* MeshClient.enroll(cp.url, peer, token.token)
      const cases = [
        yield* MeshClient.enrollStatus(cp.url, PeerKey.generate()),
        yield* MeshClient.enrollStatus(cp.url, peer, { signAs: PeerKey.generate().seed }),
        yield* MeshClient.enrollStatus(cp.url, peer, { atMs: T0 + 10 * 60_000 }),
        yield* MeshClient.request(`${cp.url}/enroll/status?peer_id=${peer.peerId}`),
        yield* MeshClient.request(`${cp.url}/enroll/status`),
      ]
      expect(cases.map((c) => c.status)).toEqual([401, 401, 401, 401, 401])
    }),
  )

  it.scoped("the admin API needs the admin token", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const none = yield* MeshClient.request(`${cp.url}/admin/bootstrap-tokens`)
      const wrong = yield* MeshClient.json(cp.url, "GET", "/admin/bootstrap-tokens", "not-the-token")
      expect([none.status, wrong.status]).toEqual([401, 401])
      const missingRole = yield* admin(cp, "POST", "/admin/bootstrap-tokens", {})
      expect([missingRole.status, missingRole.json]).toEqual([
        400,
        { error: "bad_request", message: "role is required" },
      ])
      const badTtl = yield* admin(cp, "POST", "/admin/bootstrap-tokens", { role: "mesh:role:node", ttl_hours: -1 })
      expect(badTtl.status).toBe(400)
    }),
  )
})

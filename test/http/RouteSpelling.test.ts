/**
 * A route answers under one spelling only. Every other spelling of its path (case, trailing or doubled slashes,
 * percent-encoded letters, dot segments, `;`, absolute form) is 404 before any handler runs, so none of them can
 * escape the checks that the middleware ties to the route: admin auth and no-store, the enrollment rate limit, the
 * metrics label.
 */
import { create, toBinary } from "@bufbuild/protobuf"
import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Effect, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { BootstrapEnrollRequestSchema, TokenRefreshRequestSchema } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { enrollDirectly } from "../support/nodes.js"
import * as Raw from "../support/rawHttp.js"
import { spellingsOf } from "../support/spellings.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const NOT_FOUND = { error: "not_found", message: "no such route" }

const send = (url: string, request: Raw.RawRequest) =>
  Effect.promise(() => Raw.send(url, request)).pipe(Effect.map(Raw.expectAnswer))

/** What each spelling got: `<spelling>: <status> <body> <cache-control>`, for one readable failure. */
const describeAnswer = (name: string, answer: Raw.RawAnswer) =>
  `${name}: ${answer.status} ${answer.body} cache-control=${answer.headers["cache-control"] ?? "none"}`

const notFoundLine = (name: string) =>
  describeAnswer(name, {
    status: 404,
    headers: { "cache-control": "no-store" },
    body: JSON.stringify(NOT_FOUND),
  })

const enrollBody = (peer: MeshClient.Peer, bootstrapToken: string) =>
  Effect.map(MeshClient.challenge(peer, "enroll"), (proof) =>
    toBinary(
      BootstrapEnrollRequestSchema,
      create(BootstrapEnrollRequestSchema, {
        ...proof,
        bootstrapToken,
        peerId: peer.peerId,
        publicKey: PeerKey.toProtobuf(peer.publicKey),
        requestedRole: "",
        labels: {},
      }),
    ),
  )

describeDatabases("route spellings", (db) => {
  it.scoped("an admin route answers under its one spelling: no other mints a token, every answer is no-store", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const mint = (target: string, bearer: string) =>
        send(cp.url, {
          method: "POST",
          target,
          headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
          body: JSON.stringify({ role: "mesh:role:node" }),
        })
      const spellings = spellingsOf("/admin/bootstrap-tokens")
      const answers = yield* Effect.forEach(spellings, (s) =>
        Effect.map(mint(s.target, cp.adminToken), (a) => describeAnswer(s.name, a)),
      )
      expect(answers).toEqual(spellings.map((s) => notFoundLine(s.name)))
      expect((yield* admin(cp, "GET", "/admin/bootstrap-tokens")).json).toEqual([])

      // The one spelling: admin auth holds, and the token comes back no-store.
      const refused = yield* mint("/admin/bootstrap-tokens", "not-the-admin-token")
      expect([refused.status, refused.headers["cache-control"]]).toEqual([401, "no-store"])
      const minted = yield* mint("/admin/bootstrap-tokens", cp.adminToken)
      expect([minted.status, minted.headers["cache-control"]]).toEqual([201, "no-store"])
      const id = (JSON.parse(minted.body) as { id: string }).id

      // A route with a parameter too: no other spelling revokes the token.
      const revokeSpellings = spellingsOf(`/admin/bootstrap-tokens/${id}`)
      const revokes = yield* Effect.forEach(revokeSpellings, (s) =>
        Effect.map(
          send(cp.url, { method: "DELETE", target: s.target, headers: { authorization: `Bearer ${cp.adminToken}` } }),
          (a) => describeAnswer(s.name, a),
        ),
      )
      expect(revokes).toEqual(revokeSpellings.map((s) => notFoundLine(s.name)))
      const listed = (yield* admin(cp, "GET", "/admin/bootstrap-tokens")).json as ReadonlyArray<{ revoked: boolean }>
      expect(listed.map((t) => t.revoked)).toEqual([false])
    }),
  )

  it.scoped("the enrollment rate limit holds across spellings, and no other spelling writes to the database", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({
        database: yield* db.fresh,
        autoApproveEnrollment: true,
        enrollRateLimit: { perSecond: 1, burst: 2 },
      })
      const token = yield* mintToken(cp, { max_usages: 100 })
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      const spentChallenges = Effect.map(
        sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM challenge_replays`,
        (rows) => Number(rows[0]?.n),
      )
      const spellings = [...spellingsOf("/enroll"), ...spellingsOf("/register")]
      const answers = yield* Effect.forEach(spellings, (s) =>
        Effect.gen(function* () {
          const body = yield* enrollBody(PeerKey.generate(), token.token)
          const answer = yield* send(cp.url, {
            method: "POST",
            target: s.target,
            headers: { "content-type": "application/x-protobuf" },
            body,
          })
          return describeAnswer(s.name, answer)
        }),
      )
      expect(answers).toEqual(spellings.map((s) => notFoundLine(s.name)))
      expect(yield* spentChallenges).toBe(0)

      // The budget is untouched by all of that: the burst is still there, then 429.
      const enrolls = yield* Effect.forEach([1, 2, 3], () => MeshClient.enroll(cp.url, PeerKey.generate(), token.token))
      expect(enrolls.map((a) => a.status)).toEqual([200, 200, 429])
      // HEAD is GET to the router, and to the limit: /enroll/status by HEAD is limited like by GET.
      const head = yield* send(cp.url, { method: "HEAD", target: "/enroll/status?peer_id=x" })
      expect(head.status).toBe(429)
      const statusSpellings = spellingsOf("/enroll/status?peer_id=x")
      const statuses = yield* Effect.forEach(statusSpellings, (s) =>
        Effect.map(send(cp.url, { method: "GET", target: s.target }), (a) => describeAnswer(s.name, a)),
      )
      expect(statuses).toEqual(statusSpellings.map((s) => notFoundLine(s.name)))
    }),
  )

  it.scoped("credential routes answer under one spelling: no other refreshes or reads the policy", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const node = yield* enrollDirectly(cp)
      const refreshRequest = (target: string) =>
        Effect.flatMap(MeshClient.challenge(node.peer, "refresh"), (proof) =>
          send(cp.url, {
            method: "POST",
            target,
            headers: {
              "content-type": "application/x-protobuf",
              authorization: `Bearer ${Biscuit.toText(node.credential)}`,
            },
            body: toBinary(
              TokenRefreshRequestSchema,
              create(TokenRefreshRequestSchema, { ...proof, peerId: node.peer.peerId }),
            ),
          }),
        )
      const spellings = spellingsOf("/refresh")
      const answers = yield* Effect.forEach(spellings, (s) =>
        Effect.map(refreshRequest(s.target), (a) => describeAnswer(s.name, a)),
      )
      expect(answers).toEqual(spellings.map((s) => notFoundLine(s.name)))
      // None of them superseded the node's credential: the one spelling still trades it.
      expect((yield* MeshClient.refresh(cp.url, node.peer, node.credential)).status).toBe(200)

      const policySpellings = spellingsOf("/policies")
      const policies = yield* Effect.forEach(policySpellings, (s) =>
        Effect.map(
          send(cp.url, {
            method: "GET",
            target: s.target,
            headers: { authorization: `Bearer ${cp.adminToken}`, accept: "application/json" },
          }),
          (a) => describeAnswer(s.name, a),
        ),
      )
      expect(policies).toEqual(policySpellings.map((s) => notFoundLine(s.name)))
      const policy = yield* send(cp.url, {
        method: "GET",
        target: "/policies",
        headers: { authorization: `Bearer ${cp.adminToken}`, accept: "application/json" },
      })
      expect(policy.status).toBe(200)
    }),
  )

  it.scoped("a request a route answered is labelled with that route, never unmatched", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const bearer = { authorization: `Bearer ${cp.adminToken}` }
      // HEAD is answered by the GET route, and labelled with it.
      const head = yield* send(cp.url, { method: "HEAD", target: "/admin/status", headers: bearer })
      expect([head.status, head.headers["cache-control"]]).toEqual([200, "no-store"])
      for (const s of [...spellingsOf("/admin/status"), ...spellingsOf("/info"), ...spellingsOf("/keys")]) {
        yield* send(cp.url, { method: "GET", target: s.target, headers: bearer })
      }
      yield* send(cp.url, { method: "GET", target: "/info" })
      const metrics = yield* Effect.promise(() => fetch(`${cp.url}/metrics`).then((r) => r.text()))
      const counted = metrics
        .split("\n")
        .filter((line) => line.startsWith("mesh_control_plane_http_requests_total{"))
        .map((line) => line.replace(/ \d+$/, ""))
        .sort()
      expect(counted).toEqual([
        'mesh_control_plane_http_requests_total{code="200",route="/admin/status"}',
        'mesh_control_plane_http_requests_total{code="200",route="/info"}',
        'mesh_control_plane_http_requests_total{code="404",route="unmatched"}',
      ])
    }),
  )
})

/**
 * Scale-out: three `mesh-control-plane` processes on one postgres schema, sharing nothing but the database. What one
 * replica records, every other one serves; token usages are never overspent across them; keys rotate once per
 * interval for the whole set. Every test reads the database back afterwards.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import { describePostgres } from "../support/databases.js"
import { listKeys } from "../support/keys.js"
import * as ControlPlaneProcess from "./ControlPlaneProcess.js"
import * as Db from "./Database.js"
import { admin, errorBody, mintToken, poll, text } from "./Requests.js"

describePostgres("three control-plane processes on one database", (url) => {
  it.scopedLive(
    "an enrollment, its approval, a ban and the policy, each made through one replica, hold on the others",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase.postgresSchema(url)
        const [a, b, c] = yield* ControlPlaneProcess.startAll([{ database }, { database }, { database }])
        if (a === undefined || b === undefined || c === undefined) return yield* Effect.dieMessage("three replicas")

        // Queued through A, listed and approved through B, collected through C.
        const token = yield* mintToken(a, { max_usages: 5 })
        const peer = PeerKey.generate()
        const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(a.url, peer, token.token))
        expect(queued.status).toBe(EnrollmentStatus.PENDING)

        const listed = yield* admin(b, "GET", "/admin/enrollments")
        expect(listed.status).toBe(200)
        expect(listed.json).toMatchObject([
          { id: queued.requestId, peer_id: peer.peerId, status: "pending", token_id: token.id },
        ])
        const approved = yield* admin(b, "POST", `/admin/enrollments/${queued.requestId}/approve`)
        expect([approved.status, approved.json]).toMatchObject([200, { status: "approved", resolved_by: "operator" }])

        const collected = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(c.url, peer))
        expect(collected.status).toBe(EnrollmentStatus.APPROVED)
        expect(collected.biscuitToken.length).toBeGreaterThan(0)
        // The credential C minted is the node's current one on every replica: A trades it for a new one.
        const refreshed = yield* MeshClient.decodeRefresh(
          yield* MeshClient.refresh(a.url, peer, collected.biscuitToken),
        )
        const credential = refreshed.biscuitToken

        // A and B have served /info (and cached it) before the ban is made through C.
        for (const replica of [a, b]) expect((yield* MeshClient.info(replica.url)).bannedPeerIds).toEqual([])
        const banned = yield* admin(c, "POST", "/admin/revoke", { peer_id: peer.peerId })
        expect([banned.status, banned.json]).toMatchObject([200, { peer_id: peer.peerId, banned: true, changed: true }])
        for (const replica of [a, b]) {
          yield* poll(MeshClient.info(replica.url), (info) => info.bannedPeerIds.includes(peer.peerId), {
            what: `the ban made through C on /info of ${replica.url}`,
            timeout: Duration.seconds(2),
          })
        }
        const refused = yield* MeshClient.refresh(b.url, peer, credential)
        expect([refused.status, errorBody(refused)]).toEqual([403, { error: "forbidden", message: "node is banned" }])

        // A policy posted through A is the one B serves, and the one C enrolls by.
        const policy = { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*"] }] }
        const posted = yield* admin(a, "POST", "/policies", policy)
        expect([posted.status, posted.json]).toEqual([200, { success: true }])
        const read = yield* MeshClient.request(`${b.url}/policies`, {
          headers: { authorization: `Bearer ${b.adminToken}`, accept: "application/json" },
        })
        expect(read.status).toBe(200)
        expect(JSON.parse(text(read))).toMatchObject({
          policy: { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*"] }] },
          version: "1",
        })
        const labelled = yield* MeshClient.enroll(c.url, PeerKey.generate(), token.token, { labels: { zone: "eu" } })
        expect((yield* MeshClient.decodeEnroll(labelled)).status).toBe(EnrollmentStatus.PENDING)

        // What the database holds afterwards.
        const counts = yield* Db.numbers(
          database,
          `SELECT
            (SELECT usages_count FROM bootstrap_tokens WHERE id = ?) AS usages,
            (SELECT COUNT(*) FROM nodes) AS nodes,
            (SELECT COUNT(*) FROM nodes WHERE peer_id = ? AND banned) AS banned,
            (SELECT COUNT(*) FROM enrollment_requests WHERE status = 'approved') AS approved,
            (SELECT COUNT(*) FROM enrollment_requests WHERE status = 'pending') AS pending,
            (SELECT version FROM policy WHERE id = 1) AS policy_version`,
          [token.id, peer.peerId],
        )
        expect(counts).toEqual({ usages: 1, nodes: 1, banned: 1, approved: 1, pending: 1, policy_version: 1 })
        expect(yield* Db.strings(database, "SELECT action FROM audit_log ORDER BY id")).toEqual([
          "token.minted",
          "enrollment.approved",
          "node.banned",
          "policy.replaced",
        ])

        // One replica stopping (SIGTERM) ends cleanly and leaves the others serving.
        const stopped = yield* a.stop
        expect(stopped).toEqual({ code: 0, signal: null, timedOut: false })
        expect((yield* MeshClient.info(b.url)).bannedPeerIds).toEqual([peer.peerId])
        expect((yield* admin(c, "GET", "/admin/enrollments")).json).toMatchObject([{ status: "pending" }])
      }),
    120_000,
  )

  it.scopedLive(
    "150 concurrent enrollments over three auto-approving replicas spend a 40-usage token exactly 40 times",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase.postgresSchema(url)
        const options = { database, flags: ["--auto-approve-enrollment"] }
        const replicas = yield* ControlPlaneProcess.startAll([options, options, options])
        const token = yield* mintToken(replicas[0] ?? (yield* Effect.dieMessage("no replica")), { max_usages: 40 })

        const peers = Array.from({ length: 150 }, () => PeerKey.generate())
        const answers = yield* Effect.all(
          peers.map((peer, i) =>
            Effect.map(MeshClient.enroll(replicas[i % replicas.length]?.url ?? "", peer, token.token), (answer) => ({
              peer,
              answer,
            })),
          ),
          { concurrency: "unbounded" },
        )
        const approved: Array<string> = []
        const refusals: Array<string> = []
        for (const { peer, answer } of answers) {
          if (answer.status === 200) {
            expect((yield* MeshClient.decodeEnroll(answer)).status).toBe(EnrollmentStatus.APPROVED)
            approved.push(peer.peerId)
          } else {
            refusals.push(`${answer.status} ${text(answer)}`)
          }
        }
        expect(approved).toHaveLength(40)
        // Every other enrollment is told the token is used up; none failed in another way.
        expect(new Set(refusals)).toEqual(
          new Set(['410 {"error":"gone","message":"bootstrap token has no usages left"}']),
        )

        const counts = yield* Db.numbers(
          database,
          `SELECT
            (SELECT usages_count FROM bootstrap_tokens WHERE id = ?) AS usages,
            (SELECT COUNT(*) FROM nodes) AS nodes,
            (SELECT COUNT(*) FROM enrollment_requests WHERE token_id = ? AND status = 'approved') AS approved,
            (SELECT COUNT(*) FROM enrollment_requests) AS requests`,
          [token.id, token.id],
        )
        expect(counts).toEqual({ usages: 40, nodes: 40, approved: 40, requests: 40 })
        // The nodes are exactly the peers that were told APPROVED.
        expect(new Set(yield* Db.strings(database, "SELECT peer_id FROM nodes"))).toEqual(new Set(approved))
      }),
    120_000,
  )

  it.scopedLive(
    "with a 3s rotation interval the replicas rotate once per interval together and serve the same keys",
    () =>
      Effect.gen(function* () {
        const INTERVAL_MS = 3_000
        const database = yield* TestDatabase.postgresSchema(url)

        // Every key ever made, by id, sampled from the start: a rotated-out key is deleted two rotations later.
        const made = new Map<number, number>()
        const sample = Effect.map(Db.query(database, "SELECT id, created_at FROM signing_keys"), (rows) => {
          for (const row of rows) made.set(Number(row.id), Number(row.created_at))
        })
        yield* Effect.forkScoped(
          sample.pipe(
            Effect.ignore, // the table does not exist until the first replica has migrated
            Effect.zipRight(Effect.sleep(Duration.millis(200))),
            Effect.forever,
          ),
        )

        const options = {
          database,
          flags: ["--key-rotation-interval", "3s", "--key-grace-period", "1s", "--member-sync-interval", "300ms"],
        }
        const replicas = yield* ControlPlaneProcess.startAll([options, options, options])

        // Three rotations after the first key, however long a loaded machine takes to make them. A rotation is
        // due an interval after the previous one was made, so load only makes intervals longer; no bound on how
        // many keys a stretch of wall time holds.
        yield* poll(
          Effect.map(sample, () => made.size),
          (n) => n >= 4,
          { what: "four signing keys", timeout: Duration.seconds(60), interval: Duration.millis(200) },
        )
        const ids = [...made.keys()].sort((x, y) => x - y)
        // Ids come from a sequence: the keys made are 1..n, and the sampler saw every one of them.
        expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1))
        // Once per interval for the whole set: two replicas winning the same interval would make two keys at about
        // the same moment. Keys are made no sooner than an interval after the previous one (the due time is the
        // previous key's time plus the interval; the processes share the machine's clock).
        const times = ids.map((id) => made.get(id) ?? Number.NaN)
        const gaps = times.slice(1).map((t, i) => t - (times[i] ?? Number.NaN))
        for (const gap of gaps)
          expect(gap, `gaps between key creations: ${gaps.join(", ")} ms`).toBeGreaterThanOrEqual(INTERVAL_MS)

        // Between rotations every replica serves the same key ids, ending with the newest key in the database.
        yield* poll(
          Effect.all([
            Effect.forEach(replicas, (r) => Effect.map(listKeys(r.url), (keys) => keys.map((k) => k.id).join(","))),
            Db.numbers<"newest">(database, "SELECT MAX(id) AS newest FROM signing_keys"),
          ]),
          ([served, { newest }]) =>
            new Set(served).size === 1 && (served[0] ?? "").split(",").at(-1) === String(newest),
          // Retried across rotations until one moment finds every replica up to date; generous for a loaded machine.
          { what: "the same key ids on every replica's /keys", timeout: Duration.seconds(60) },
        )
      }),
    120_000,
  )
})

import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Fiber, Layer, Option, Redacted, Ref, TestClock } from "effect"
import * as PeerKey from "../../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../../src/gen/mesh_pb.js"
import * as ControlPlaneClientLive from "../../../src/layers/member/ControlPlaneClientLive.js"
import * as MembershipLive from "../../../src/layers/member/MembershipLive.js"
import { ControlPlaneClient, ControlPlaneUnreachable } from "../../../src/services/member/ControlPlaneClient.js"
import * as Harness from "../../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../../src/testing/MeshClient.js"
import { admin, mintToken } from "../../support/admin.js"
import { describeDatabases } from "../../support/databases.js"
import { eventually } from "../../support/eventually.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

/** A data folder holding only the member's key, as a machine that crashed before storing its credential has. */
const dataDirWithKey = (seed: Uint8Array) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "mesh-member-"))
      writeFileSync(join(dir, "identity.json"), JSON.stringify({ seed: Buffer.from(seed).toString("hex") }), {
        mode: 0o600,
      })
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
  )

const member = (cp: Harness.ControlPlaneHarness, token: string, dataDir: string) =>
  MembershipLive.make({
    role: "mesh:role:node",
    labels: {},
    bootstrapToken: Option.some(Redacted.make(token)),
    idToken: Option.none(),
    dataDir: Option.some(dataDir),
    syncInterval: Duration.minutes(5),
  }).pipe(Effect.provide(ControlPlaneClientLive.layer(cp.url)))

/** Approves the peer's queued request and collects its credential, which the member then never sees. */
const approveAndLoseTheAnswer = (cp: Harness.ControlPlaneHarness, peer: MeshClient.Peer) =>
  Effect.gen(function* () {
    const listed = yield* eventually(
      admin(cp, "GET", "/admin/enrollments"),
      (a) => Array.isArray(a.json) && a.json.length === 1,
      { what: "the request is queued" },
    )
    const [request] = listed.json as ReadonlyArray<{ readonly id: string }>
    yield* admin(cp, "POST", `/admin/enrollments/${request?.id}/approve`)
    const lost = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
    expect([lost.status, lost.biscuitToken.length > 0]).toEqual([EnrollmentStatus.APPROVED, true])
  })

describeDatabases("membership enrollment", (db) => {
  it.scoped("a queued member whose approval was collected elsewhere enrolls again with its token and joins", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const joining = yield* Effect.fork(member(cp, token.token, yield* dataDirWithKey(peer.seed)))
      yield* approveAndLoseTheAnswer(cp, peer)

      // At its next poll the member learns the state without a credential, and enrolls again.
      yield* eventually(TestClock.sleeps(), (due) => Chunk.some(due, (at) => at === T0 + 30_000), {
        what: "the member waits for its next poll",
      })
      yield* TestClock.adjust(Duration.seconds(30))
      const joined = yield* Fiber.join(joining)
      expect(joined.peerId).toBe(peer.peerId)
      expect((yield* MeshClient.refresh(cp.url, peer, yield* joined.credential)).status).toBe(200)
    }),
  )

  it.scoped("a member that crashed between the release and storing it enrolls again at restart", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      expect((yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))).status).toBe(
        EnrollmentStatus.PENDING,
      )
      yield* approveAndLoseTheAnswer(cp, peer)
      yield* TestClock.adjust(Duration.seconds(1))

      const joined = yield* member(cp, token.token, yield* dataDirWithKey(peer.seed))
      expect(joined.peerId).toBe(peer.peerId)
      expect((yield* MeshClient.refresh(cp.url, peer, yield* joined.credential)).status).toBe(200)
    }),
  )

  it.scoped("a key sync that fails does not hold back the bans: the periodic sync applies them all the same", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      // The control plane's /keys fails while `keysDown` is set; everything else answers as always.
      const keysDown = yield* Ref.make(false)
      const client = ControlPlaneClientLive.make(cp.url)
      const flakyKeys = Layer.succeed(
        ControlPlaneClient,
        ControlPlaneClient.of({
          ...client,
          keys: Effect.flatMap(Ref.get(keysDown), (down) =>
            down ? Effect.fail(new ControlPlaneUnreachable({ reason: "/keys fails in this test" })) : client.keys,
          ),
        }),
      )
      const joined = yield* MembershipLive.make({
        role: "mesh:role:node",
        labels: {},
        bootstrapToken: Option.some(Redacted.make((yield* mintToken(cp)).token)),
        idToken: Option.none(),
        dataDir: Option.some(yield* dataDirWithKey(PeerKey.generate().seed)),
        syncInterval: Duration.minutes(5),
      }).pipe(Effect.provide(flakyKeys))
      const other = PeerKey.generate()
      yield* MeshClient.enroll(cp.url, other, (yield* mintToken(cp)).token)

      yield* Ref.set(keysDown, true)
      expect((yield* admin(cp, "POST", "/admin/revoke", { peer_id: other.peerId })).status).toBe(200)
      // The ban's event is lost (this member hears none): the sync is what brings it.
      expect((yield* joined.banned).has(other.peerId)).toBe(false)
      yield* eventually(TestClock.sleeps(), (due) => Chunk.some(due, (at) => at === T0 + 300_000), {
        what: "the sync waits for its interval",
      })
      yield* TestClock.adjust(Duration.minutes(5))
      yield* eventually(joined.banned, (banned) => banned.has(other.peerId), { what: "the sync applied the ban" })
    }),
  )
})

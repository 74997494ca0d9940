/**
 * Node records are written with targeted, conditional updates: a ban committed between a flow's read of the node and
 * its write is never undone. The interleaving is made explicit: the flow under test runs over the real Nodes store,
 * except that its first read of the peer is followed by a ban that commits before the flow goes on.
 */
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Option, Ref, TestClock } from "effect"
import * as Challenge from "../../src/domain/Challenge.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import type * as ControlPlaneLive from "../../src/layers/ControlPlaneLive.js"
import * as EnrollmentLive from "../../src/layers/enrollment/EnrollmentLive.js"
import * as RegistrationLive from "../../src/layers/enrollment/RegistrationLive.js"
import { Enrollment } from "../../src/services/enrollment/Enrollment.js"
import { Registration } from "../../src/services/enrollment/Registration.js"
import { Bans } from "../../src/services/nodes/Bans.js"
import { Nodes } from "../../src/services/nodes/Nodes.js"
import { OPERATOR } from "../../src/services/operations/Audit.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const policy = {
  roles: [{ name: "mesh:role:node" }],
  bindings: [{ role: "mesh:role:node", members: ["user:alice"] }],
}

/** The real Nodes store, but the first read of `peerId` is followed by a committed ban. */
const banAfterFirstRead = (peerId: string) =>
  Layer.effect(
    Nodes,
    Effect.gen(function* () {
      const real = yield* Nodes
      const bans = yield* Bans
      const done = yield* Ref.make(false)
      return {
        ...real,
        find: (p: string) =>
          Effect.tap(real.find(p), () =>
            p !== peerId
              ? Effect.void
              : Effect.flatMap(Ref.getAndSet(done, true), (already) =>
                  already ? Effect.void : Effect.orDie(bans.ban(p, OPERATOR)),
                ),
          ),
      }
    }),
  )

type Services = Layer.Layer.Success<ReturnType<typeof ControlPlaneLive.layer>>

/** A service of the harnessed control plane rebuilt over the interleaving Nodes store. */
const interleaved = <I, S>(
  cp: Harness.ControlPlaneHarness,
  peerId: string,
  tag: Context.Tag<I, S>,
  layer: Layer.Layer<I, never, Services>,
) =>
  Effect.map(
    Layer.build(layer.pipe(Layer.provide(banAfterFirstRead(peerId)), Layer.provide(Layer.succeedContext(cp.context)))),
    (context) => Context.get(context, tag),
  )

const stillBanned = (cp: Harness.ControlPlaneHarness, peerId: string) =>
  Effect.gen(function* () {
    const node = yield* Context.get(cp.context, Nodes).find(peerId)
    expect(Option.map(node, (n) => n.banned)).toEqual(Option.some(true))
    expect((yield* MeshClient.info(cp.url)).bannedPeerIds).toContain(peerId)
    return Option.getOrThrow(node)
  })

describeDatabases("node writes never undo a ban", (db) => {
  it.scoped("re-enrollment: a ban committed after the read stands, and the enrollment is refused", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const token = yield* mintToken(cp, { max_usages: 2 })
      const peer = PeerKey.generate()
      expect((yield* MeshClient.enroll(cp.url, peer, token.token)).status).toBe(200)
      yield* TestClock.adjust(Duration.seconds(1))

      const enrollment = yield* interleaved(cp, peer.peerId, Enrollment, EnrollmentLive.layer)
      const exit = yield* Effect.exit(
        enrollment.enroll({
          ...(yield* MeshClient.challenge(peer, "enroll")),
          bootstrapToken: token.token,
          peerId: peer.peerId,
          publicKey: PeerKey.toProtobuf(peer.publicKey),
          requestedRole: "",
          labels: {},
        }),
      )
      expect(exit).toEqual(Exit.fail(expect.objectContaining({ _tag: "Forbidden", message: "node is banned" })))
      yield* stillBanned(cp, peer.peerId)
    }),
  )

  it.scoped("status collection: a ban committed after the read stands, and nothing is released", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)

      const enrollment = yield* interleaved(cp, peer.peerId, Enrollment, EnrollmentLive.layer)
      const proof = yield* MeshClient.challenge(peer, "enroll-status")
      const exit = yield* Effect.exit(
        enrollment.status({
          peerId: peer.peerId,
          challengeUnixMs: String(proof.challengeUnixMs),
          challengeSignature: Challenge.toHeader(proof.challengeSignature),
        }),
      )
      expect(exit).toEqual(Exit.fail(expect.objectContaining({ _tag: "Forbidden", message: "node is banned" })))
      yield* stillBanned(cp, peer.peerId)
    }),
  )

  it.scoped("OIDC registration again: a ban committed after the read stands, and the registration is refused", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
      yield* setPolicy(cp, policy)
      const peer = PeerKey.generate()
      expect((yield* MeshClient.register(cp.url, peer, yield* issuer.mint({ sub: "alice" }))).status).toBe(200)
      yield* TestClock.adjust(Duration.seconds(1))

      const registration = yield* interleaved(cp, peer.peerId, Registration, RegistrationLive.layer)
      const exit = yield* Effect.exit(
        registration.register({
          ...(yield* MeshClient.challenge(peer, "register")),
          idToken: yield* issuer.mint({ sub: "alice" }),
          peerId: peer.peerId,
          publicKey: PeerKey.toProtobuf(peer.publicKey),
          requestedRole: "mesh:role:node",
          labels: {},
        }),
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const node = yield* stillBanned(cp, peer.peerId)
      expect(node.identity?.subject).toBe("alice")
    }),
  )

  it.scoped("approving a queued request never overwrites a node of the same peer: 409, the node unchanged", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
      yield* setPolicy(cp, policy)
      const token = yield* mintToken(cp)
      const peer = PeerKey.generate()
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      // Meanwhile the same machine registers through OIDC, and is banned.
      expect((yield* MeshClient.register(cp.url, peer, yield* issuer.mint({ sub: "alice" }))).status).toBe(200)
      yield* admin(cp, "POST", "/admin/revoke", { peer_id: peer.peerId })

      const approved = yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`)
      expect([approved.status, approved.json]).toEqual([
        409,
        { error: "conflict", message: "the peer is already enrolled; reject the request" },
      ])
      const node = yield* stillBanned(cp, peer.peerId)
      expect([node.enrollmentType, node.identity?.subject, node.sessionExpiresAt]).toEqual([
        "oidc",
        "alice",
        T0 + 2160 * 3_600_000,
      ])
      const tokens = yield* admin(cp, "GET", "/admin/bootstrap-tokens")
      expect(tokens.json).toMatchObject([{ usages_count: 0 }])
      const pending = yield* admin(cp, "GET", "/admin/enrollments")
      expect(pending.json).toMatchObject([{ id: queued.requestId, status: "pending" }])
    }),
  )
})

import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Redacted, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { MeshEvents } from "../../src/services/events/MeshEvents.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { runBin } from "../support/processes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("bans", (db) => {
  it.scoped(
    "a ban through the API is listed on /info, refuses refresh and enroll, bans the identity; unban restores",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(T0)
        const issuer = yield* DevOidcIssuer.make()
        const cp = yield* Harness.make({
          database: yield* db.fresh,
          issuers: [issuer.url],
          autoApproveEnrollment: true,
        })
        yield* setPolicy(cp, {
          roles: [{ name: "mesh:role:node" }],
          bindings: [{ role: "mesh:role:node", members: ["mesh:system:authenticated"] }],
        })

        // An OIDC node and a bootstrap node.
        const idToken = yield* issuer.mint({ sub: "erin" })
        const oidcPeer = PeerKey.generate()
        const registered = yield* MeshClient.decodeRegister(yield* MeshClient.register(cp.url, oidcPeer, idToken))
        const token = yield* mintToken(cp, { max_usages: 5 })
        const bootPeer = PeerKey.generate()
        const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, bootPeer, token.token))

        const banned = yield* admin(cp, "POST", "/admin/revoke", { peer_id: oidcPeer.peerId })
        expect(banned.json).toEqual({
          peer_id: oidcPeer.peerId,
          banned: true,
          identity: `${issuer.url}|erin`,
          changed: true,
        })
        yield* admin(cp, "POST", "/admin/revoke", { peer_id: bootPeer.peerId })
        expect([...(yield* MeshClient.info(cp.url)).bannedPeerIds].sort()).toEqual(
          [oidcPeer.peerId, bootPeer.peerId].sort(),
        )

        expect((yield* MeshClient.refresh(cp.url, oidcPeer, registered.biscuitToken)).status).toBe(403)
        expect((yield* MeshClient.refresh(cp.url, bootPeer, enrolled.biscuitToken)).status).toBe(403)
        yield* TestClock.adjust(Duration.seconds(1))
        const reEnroll = yield* MeshClient.enroll(cp.url, bootPeer, token.token)
        expect([reEnroll.status, MeshClient.errorOf(reEnroll).message]).toEqual([403, "node is banned"])
        // The identity is banned too: a fresh key for the same person is refused.
        const freshKey = yield* MeshClient.register(cp.url, PeerKey.generate(), yield* issuer.mint({ sub: "erin" }))
        expect([freshKey.status, MeshClient.errorOf(freshKey).message]).toEqual([403, "identity is banned"])
        const events = yield* Context.get(cp.context, MeshEvents).recent
        expect(events.filter((e) => e.type === "banned").map((e) => (e as { peerId: string }).peerId)).toEqual([
          oidcPeer.peerId,
          bootPeer.peerId,
        ])

        const unbanned = yield* admin(cp, "POST", `/admin/nodes/${oidcPeer.peerId}/unban`)
        expect(unbanned.json).toMatchObject({ banned: false, changed: true })
        expect((yield* MeshClient.info(cp.url)).bannedPeerIds).toEqual([bootPeer.peerId])
        expect((yield* MeshClient.refresh(cp.url, oidcPeer, registered.biscuitToken)).status).toBe(200)
        expect(
          (yield* MeshClient.register(cp.url, PeerKey.generate(), yield* issuer.mint({ sub: "erin" }))).status,
        ).toBe(200)
        expect((yield* admin(cp, "POST", "/admin/revoke", { peer_id: PeerKey.generate().peerId })).status).toBe(404)
      }),
  )

  it.scoped(
    "the admin command bans and unbans in the database, and fails on an unknown peer",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(T0)
        const database = yield* db.freshShared
        const cp = yield* Harness.make({ database, autoApproveEnrollment: true })
        const token = yield* mintToken(cp)
        const peer = PeerKey.generate()
        const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
        const dbFlags = ["--db-driver", database.driver, "--db-dsn", Redacted.value(database.dsn)]

        const ban = yield* Effect.promise(() =>
          runBin("mesh-control-plane", ["admin", "ban", "--peer", peer.peerId, ...dbFlags]),
        )
        expect(ban.status, ban.stderr).toBe(0)
        expect(ban.stdout).toContain(`banned ${peer.peerId}`)
        // Another process wrote the ban: postgres tells the server at once; on sqlite its cache lasts two seconds.
        yield* TestClock.adjust(Duration.seconds(2))
        yield* eventually(MeshClient.info(cp.url), (i) => i.bannedPeerIds.includes(peer.peerId), {
          what: "ban on /info",
        })
        expect((yield* MeshClient.refresh(cp.url, peer, enrolled.biscuitToken)).status).toBe(403)

        const unban = yield* Effect.promise(() =>
          runBin("mesh-control-plane", ["admin", "unban", "--peer", peer.peerId, ...dbFlags]),
        )
        expect(unban.stdout).toContain(`unbanned ${peer.peerId}`)
        yield* TestClock.adjust(Duration.seconds(2))
        yield* eventually(MeshClient.info(cp.url), (i) => i.bannedPeerIds.length === 0, { what: "unban on /info" })

        const unknown = yield* Effect.promise(() =>
          runBin("mesh-control-plane", ["admin", "ban", "--peer", "12D3KooWNope", ...dbFlags]),
        )
        expect(unknown.status).toBe(1)
        expect(unknown.stderr.trim()).toBe("mesh-control-plane: no such node")

        const sql = Context.get(cp.context, SqlClient.SqlClient)
        const audit = yield* sql<{
          actor: string
          action: string
        }>`SELECT actor, action FROM audit_log WHERE subject = ${peer.peerId} ORDER BY id`
        expect(audit).toEqual([
          { actor: "cli", action: "node.banned" },
          { actor: "cli", action: "node.unbanned" },
        ])
      }),
    { timeout: 180_000 },
  )
})

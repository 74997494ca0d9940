import { expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { ServiceType } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { addressOf, enrollRouter } from "../support/routers.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("operator views", (db) => {
  it.scoped("status shows routers, nodes, queue, tokens, policy and catalog, and no secrets", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedServices: ["mcp://*"] }] })
      const router = yield* enrollRouter(cp)
      yield* MeshClient.lease(cp.url, router.peer, router.credential, [addressOf(router.peer.peerId)], {
        connectedPeers: ["a", "b"],
        dhtSize: 3,
      })
      const token = yield* mintToken(cp, { max_usages: 3, description: "fleet" })
      const peer = PeerKey.generate()
      const node = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
      const reported = yield* MeshClient.reportCatalog(cp.url, peer, node.biscuitToken, [
        { type: ServiceType.MCP, name: "files", description: "file tools" },
      ])
      expect(reported.status).toBe(204)

      const status = yield* admin(cp, "GET", "/admin/status")
      expect(status.status).toBe(200)
      expect(status.json).toMatchObject({
        counts: { nodes: 2, routers: 1, pending_enrollments: 0, bootstrap_tokens: 2, users: 0 },
        routers: [{ peer_id: router.peer.peerId, connected_peers: 2, dht_size: 3 }],
        policy: { version: 1, document: { roles: [{ name: "mesh:role:node", allowedServices: ["mcp://*"] }] } },
        catalog: [{ peer_id: peer.peerId, services: [{ type: "mcp", name: "files", description: "file tools" }] }],
      })
      const text = JSON.stringify(status.json)
      expect(text).not.toContain(token.token)
      expect(text).not.toContain(Buffer.from(node.biscuitToken).toString("base64"))
      expect(text).not.toMatch(/private|seed|token_hash/)

      const toggled = yield* admin(cp, "POST", `/admin/nodes/${peer.peerId}/autonomous-recovery`, { enabled: true })
      expect(toggled.json).toEqual({ peer_id: peer.peerId, autonomous_recovery: true })
      expect(
        (yield* admin(cp, "POST", `/admin/nodes/${PeerKey.generate().peerId}/autonomous-recovery`, { enabled: true }))
          .status,
      ).toBe(404)
      expect(
        (yield* admin(cp, "POST", `/admin/nodes/${peer.peerId}/autonomous-recovery`, { enabled: "yes" })).status,
      ).toBe(400)
    }),
  )

  it.scoped("the audit log records every state change with actor and subject, newest first, in pages", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const token = yield* mintToken(cp)
      const queued = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token))
      yield* admin(cp, "POST", `/admin/enrollments/${queued.requestId}/reject`)
      yield* admin(cp, "DELETE", `/admin/bootstrap-tokens/${token.id}`)
      yield* setPolicy(cp, { roles: [{ name: "r" }] })

      const first = yield* admin(cp, "GET", "/admin/audit?limit=2")
      const page1 = first.json as { entries: Array<{ action: string; actor: string; subject: string }>; next: number }
      expect(page1.entries.map((e) => e.action)).toEqual(["policy.replaced", "token.revoked"])
      const second = yield* admin(cp, "GET", `/admin/audit?limit=2&before=${page1.next}`)
      const page2 = second.json as {
        entries: Array<{ action: string; actor: string; subject: string }>
        next: number | null
      }
      expect(page2.entries).toMatchObject([
        { action: "enrollment.rejected", actor: "operator", subject: queued.requestId },
        { action: "token.minted", actor: "operator", subject: token.id },
      ])
      expect(page2.next).toBeNull()
      expect((yield* admin(cp, "GET", "/admin/audit?limit=0")).status).toBe(400)
      expect((yield* MeshClient.request(`${cp.url}/admin/audit`)).status).toBe(401)
    }),
  )

  it.scoped("the audit log filters by actor and by action, and pages within the filter", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
      yield* setPolicy(cp, {
        roles: [{ name: "mesh:role:node" }],
        bindings: [{ role: "mesh:role:node", members: ["mesh:system:authenticated"] }],
      })
      const minted = [yield* mintToken(cp), yield* mintToken(cp), yield* mintToken(cp)]
      const idToken = yield* issuer.mint({ sub: "dana" })
      const byUser = yield* MeshClient.json(cp.url, "POST", "/user/bootstrap-tokens", idToken, {})
      expect(byUser.status).toBe(201)
      yield* admin(cp, "DELETE", `/admin/bootstrap-tokens/${minted[0]?.id}`)

      type Page = { entries: Array<{ action: string; actor: string; subject: string }>; next: number | null }
      const page = (query: string) => Effect.map(admin(cp, "GET", `/admin/audit?${query}`), (a) => a.json as Page)

      const mintedPage1 = yield* page("action=token.minted&limit=2")
      expect(mintedPage1.entries.map((e) => e.subject)).toEqual([(byUser.json as { id: string }).id, minted[2]?.id])
      const mintedPage2 = yield* page(`action=token.minted&limit=2&before=${mintedPage1.next}`)
      expect(mintedPage2.entries.map((e) => e.subject)).toEqual([minted[1]?.id, minted[0]?.id])
      expect(mintedPage2.next).toBeNull()

      const user = yield* page(`actor=${encodeURIComponent(`user:${issuer.url}|dana`)}`)
      expect(user.entries.map((e) => e.action)).toEqual(["token.minted"])
      const operatorRevocations = yield* page("actor=operator&action=token.revoked")
      expect(operatorRevocations.entries.map((e) => e.subject)).toEqual([minted[0]?.id])
      expect((yield* page("actor=cli")).entries).toEqual([])
      expect((yield* admin(cp, "GET", "/admin/audit?action=token.stolen")).status).toBe(400)
    }),
  )
})

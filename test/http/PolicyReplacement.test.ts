/**
 * `PUT /policies` replaces the mesh policy, and a replacement is whole: a field the first policy set and the second
 * leaves out is gone, both from what `GET /policies` shows and from what the control plane enforces (labels an
 * enrollee may carry, identities bound to a role). Nothing of the first policy is merged into the second.
 */
import { fromBinary } from "@bufbuild/protobuf"
import { expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { PolicyConfigGetResponseSchema } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const first = {
  roles: [
    {
      name: "mesh:role:node",
      description: "machines",
      allowedLabels: ["zone=*"],
      allowedServices: ["mcp://*"],
      allowedTargets: ["*"],
    },
    { name: "team-a", allowedLabels: ["team=a"] },
  ],
  bindings: [{ role: "mesh:role:node", members: ["user:alice"] }],
}
// Only the node role, with only its services: no description, labels, targets, second role or bindings.
const second = { roles: [{ name: "mesh:role:node", allowedServices: ["mcp://files"] }] }

const readPolicy = (cp: Harness.ControlPlaneHarness) =>
  Effect.map(
    MeshClient.request(`${cp.url}/policies`, { headers: { authorization: `Bearer ${cp.adminToken}` } }),
    (answer) => fromBinary(PolicyConfigGetResponseSchema, answer.body),
  )

describeDatabases("PUT /policies", (db) => {
  it.scoped("replaces the policy as a whole: what the second leaves out is gone, shown and enforced", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url], autoApproveEnrollment: true })
      const token = yield* mintToken(cp, { max_usages: 10 })
      const enroll = (labels: Record<string, string>) =>
        Effect.map(MeshClient.enroll(cp.url, PeerKey.generate(), token.token, { labels }), (a) => a.status)
      const register = Effect.flatMap(issuer.mint({ sub: "alice" }), (idToken) =>
        Effect.map(MeshClient.register(cp.url, PeerKey.generate(), idToken), (a) => a.status),
      )

      const put = yield* admin(cp, "PUT", "/policies", first)
      expect([put.status, put.json]).toEqual([200, { success: true }])
      const shown = yield* readPolicy(cp)
      expect(shown.version).toBe(1n)
      expect(shown.policy?.roles.map((r) => [r.name, r.description, r.allowedLabels, r.allowedTargets])).toEqual([
        ["mesh:role:node", "machines", ["zone=*"], ["*"]],
        ["team-a", "", ["team=a"], []],
      ])
      expect(shown.policy?.bindings.map((b) => [b.role, b.members])).toEqual([["mesh:role:node", ["user:alice"]]])
      expect(yield* enroll({ zone: "eu" })).toBe(200)
      expect(yield* register).toBe(200)

      const replaced = yield* admin(cp, "PUT", "/policies", second)
      expect([replaced.status, replaced.json]).toEqual([200, { success: true }])
      const after = yield* readPolicy(cp)
      expect(after.version).toBe(2n)
      expect(after.policy?.roles.map((r) => [r.name, r.description, r.allowedLabels, r.allowedTargets])).toEqual([
        ["mesh:role:node", "", [], []],
      ])
      expect(after.policy?.roles[0]?.allowedServices).toEqual(["mcp://files"])
      expect(after.policy?.bindings).toEqual([])
      // Enforced as shown: the labels and the binding of the first policy no longer admit anyone.
      expect(yield* enroll({ zone: "eu" })).toBe(403)
      expect(yield* enroll({})).toBe(200)
      expect(yield* register).toBe(403)
      const status = (yield* admin(cp, "GET", "/admin/status")).json as { policy: { document: unknown } }
      expect(status.policy.document).toEqual({ roles: [{ name: "mesh:role:node", allowedServices: ["mcp://files"] }] })
    }),
  )
})

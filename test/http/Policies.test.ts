import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import { PolicyConfigGetResponseSchema, PolicyConfigUpdateRequestSchema } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const good = {
  roles: [{ name: "mesh:role:node", allowedServices: ["mcp://*"], allowedLabels: ["zone=*"] }],
  bindings: [{ role: "mesh:role:node", members: ["group:eng*"] }],
}

describeDatabases("mesh policy", (db) => {
  it.scoped("is replaced as a whole; an unknown field is refused and the old policy stays", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const posted = yield* admin(cp, "POST", "/policies", good)
      expect([posted.status, posted.json]).toEqual([200, { success: true }])

      const unknown = yield* admin(cp, "PUT", "/policies", { ...good, surprise: true })
      expect(unknown.status).toBe(400)
      expect((unknown.json as { message: string }).message).toContain("surprise")
      const nested = yield* admin(cp, "PUT", "/policies", { roles: [{ name: "x", allowedLabel: ["a=b"] }] })
      expect(nested.status).toBe(400)

      const read = yield* MeshClient.request(`${cp.url}/policies`, {
        headers: { authorization: `Bearer ${cp.adminToken}` },
      })
      const current = fromBinary(PolicyConfigGetResponseSchema, read.body)
      expect(current.version).toBe(1n)
      expect(current.policy?.roles.map((r) => r.name)).toEqual(["mesh:role:node"])
      expect(current.datalogRules).toContain(
        `role("mesh:role:node") <- issuer("${Harness.DEFAULT_ISSUER}"), group($v), $v.starts_with("eng")`,
      )
    }),
  )

  it.scoped("an unknown field nested in a role or a binding is refused, in protobuf and in protojson", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      yield* admin(cp, "POST", "/policies", good)
      const postProtobuf = (body: Uint8Array) =>
        MeshClient.request(`${cp.url}/policies`, {
          method: "POST",
          headers: { authorization: `Bearer ${cp.adminToken}`, "content-type": "application/x-protobuf" },
          body: Buffer.from(body),
        })
      // A role `{name: "r"}` and a binding `{role: "r"}`, each followed by field 99 (varint 1), which neither has.
      const unknownField = [0x98, 0x06, 0x01]
      const role = [0x0a, 0x01, 0x72, ...unknownField]
      const binding = [0x0a, 0x01, 0x72, ...unknownField]
      for (const body of [
        [0x0a, role.length, ...role],
        [0x0a, 0x03, 0x0a, 0x01, 0x72, 0x12, binding.length, ...binding],
      ]) {
        const answer = yield* postProtobuf(new Uint8Array(body))
        expect([answer.status, MeshClient.errorOf(answer).error]).toEqual([400, "bad_request"])
      }
      const json = yield* admin(cp, "POST", "/policies", {
        roles: [{ name: "r" }],
        bindings: [{ role: "r", members: ["user:a"], surprise: true }],
      })
      expect(json.status).toBe(400)
      const read = yield* MeshClient.request(`${cp.url}/policies`, {
        headers: { authorization: `Bearer ${cp.adminToken}` },
      })
      expect(fromBinary(PolicyConfigGetResponseSchema, read.body).version).toBe(1n)
    }),
  )

  it.scoped("an invalid policy is refused with the reason", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [
          { bindings: [{ role: "ghost", members: ["user:a"] }] },
          'invalid policy: bindings[0].role: binding names undefined role "ghost"',
        ],
        [{ roles: [{ name: "r" }, { name: "r" }] }, 'invalid policy: roles[1].name: role "r" is defined twice'],
        [
          { roles: [{ name: "r", allowedLabels: ["zone"] }] },
          'invalid policy: roles[0].allowed_labels[0]: role "r": allowed label "zone" is not *, key=* or key=value',
        ],
        [
          { roles: [{ name: "r" }], bindings: [{ role: "r", members: ["node:*"] }] },
          'invalid policy: bindings[0].members[0]: member "node:*" has no value',
        ],
        [
          { roles: [{ name: "r" }], bindings: [{ role: "r", members: ["user:a*b"] }] },
          'invalid policy: bindings[0].members[0]: member "user:a*b" may carry one leading or trailing * only',
        ],
        [
          { roles: [{ name: "r" }], bindings: [{ role: "r", members: ["team:x"] }] },
          'invalid policy: bindings[0].members[0]: member "team:x" must be mesh:system:authenticated or start with node:, user:, email: or group:',
        ],
        [
          { roles: [{ name: "r", allowedServices: ["ftp"] }] },
          'invalid policy: roles[0].allowed_services[0]: role "r": service "ftp" is not * or type://name',
        ],
        [
          { roles: [{ name: "r" }], bindings: [{ role: "r", members: [] }] },
          'invalid policy: bindings[0]: binding of role "r" has no members',
        ],
      ]
      for (const [body, message] of cases) {
        const answer = yield* admin(cp, "POST", "/policies", body)
        expect([answer.status, answer.json]).toEqual([400, { error: "bad_request", message }])
      }
    }),
  )

  it.scoped("accepts protobuf and answers in kind; mesh components read it with their credential", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const body = toBinary(PolicyConfigUpdateRequestSchema, create(PolicyConfigUpdateRequestSchema, good))
      const posted = yield* MeshClient.request(`${cp.url}/policies`, {
        method: "POST",
        headers: { authorization: `Bearer ${cp.adminToken}`, "content-type": "application/x-protobuf" },
        body: Buffer.from(body),
      })
      expect([posted.status, posted.headers.get("content-type")]).toEqual([200, "application/x-protobuf"])

      const node = yield* enrollDirectly(cp)
      const read = yield* MeshClient.request(`${cp.url}/policies`, {
        headers: { authorization: `Bearer ${Biscuit.toText(node.credential)}` },
      })
      expect(fromBinary(PolicyConfigGetResponseSchema, read.body).policy?.bindings[0]?.members).toEqual(["group:eng*"])

      const noAuth = yield* MeshClient.request(`${cp.url}/policies`)
      const garbage = yield* MeshClient.request(`${cp.url}/policies`, { headers: { authorization: "Bearer abc" } })
      expect([noAuth.status, garbage.status]).toEqual([401, 401])
      // Writing needs the admin token, not a credential.
      const asNode = yield* MeshClient.json(cp.url, "POST", "/policies", Biscuit.toText(node.credential), good)
      expect(asNode.status).toBe(401)
    }),
  )

  it.scoped("carries tool pins: stored, read back by a node with its credential, a bad one refused with its path", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const fingerprint = `sha256:${"ab".repeat(32)}`
      const pinned = {
        ...good,
        tool_pins: [
          { tool: "mcp://demo/word_count", fingerprint },
          { tool: "mcp://demo/word_count", fingerprint: `sha256:${"cd".repeat(32)}`, peer_labels: { zone: "eu" } },
        ],
      }
      const posted = yield* admin(cp, "POST", "/policies", pinned)
      expect([posted.status, posted.json]).toEqual([200, { success: true }])

      const node = yield* enrollDirectly(cp)
      const read = yield* MeshClient.request(`${cp.url}/policies`, {
        headers: { authorization: `Bearer ${Biscuit.toText(node.credential)}` },
      })
      const pins = fromBinary(PolicyConfigGetResponseSchema, read.body).policy?.toolPins ?? []
      expect(pins.map((p) => [p.tool, p.fingerprint, { ...p.peerLabels }])).toEqual([
        ["mcp://demo/word_count", fingerprint, {}],
        ["mcp://demo/word_count", `sha256:${"cd".repeat(32)}`, { zone: "eu" }],
      ])

      const refusals = [
        [{ tool: "demo/word_count", fingerprint }, "tool_pins[0].tool"],
        [{ tool: "mcp://demo/word_count", fingerprint: "sha256:AB" }, "tool_pins[0].fingerprint"],
        [{ tool: "mcp://demo/x", fingerprint, peer_labels: { "bad key": "v" } }, "tool_pins[0].peer_labels"],
      ] as const
      for (const [pin, path] of refusals) {
        const answer = yield* admin(cp, "PUT", "/policies", { ...good, tool_pins: [pin] })
        expect(answer.status).toBe(400)
        expect((answer.json as { message: string }).message).toContain(path)
      }
      const twice = yield* admin(cp, "PUT", "/policies", {
        ...good,
        tool_pins: [pinned.tool_pins[0], pinned.tool_pins[0]],
      })
      expect((twice.json as { message: string }).message).toContain("listed twice")
      // Nothing refused replaced the policy.
      const after = yield* MeshClient.request(`${cp.url}/policies`, {
        headers: { authorization: `Bearer ${cp.adminToken}` },
      })
      expect(fromBinary(PolicyConfigGetResponseSchema, after.body).policy?.toolPins).toHaveLength(2)
    }),
  )
})

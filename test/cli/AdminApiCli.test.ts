/**
 * The operator commands over the admin API, each run as an operator runs it (a child process) against a real control
 * plane on loopback: what they print, and the one line they fail with.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { freePort } from "../../src/testing/Ports.js"
import { runBin } from "../support/processes.js"

const lines = (text: string) => text.split("\n").filter((l) => l.trim().length > 0)

const workDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-admin-cli-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
)

/** `mesh-control-plane admin <args>` against `url` with the token in `tokenFile`. */
const adminCli = (url: string, tokenFile: string) => (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    runBin("mesh-control-plane", ["admin", ...args, "--control-plane", url, "--admin-token-path", tokenFile], {
      MESH_ADMIN_TOKEN: "",
      MESH_CONTROL_PLANE: "",
    }),
  )

const GOOD_POLICY = `# roles first
roles:
  - name: mesh:role:node
    allowed_labels: ["zone=*"]
    allowed_services: ["mcp://*"]
    allowed_targets: ["*"]
bindings:
  - role: mesh:role:node
    members:
      - user:alice
`

const REFUSED_POLICY = `roles:
  - name: mesh:role:node
    allowedServices: ["mcp://*"]
bindings:
  - role: mesh:role:node
    members:
      - user:alice
      - user:https://elsewhere.example|bob
`

describe("mesh-control-plane admin over the API", () => {
  it.live(
    "tokens, approvals, nodes, policy and status against a running control plane",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* ControlPlaneHarness.make({})
          const dir = yield* workDir
          const tokenFile = join(dir, "admin-token")
          writeFileSync(tokenFile, `${cp.adminToken}\n`, { mode: 0o600 })
          const run = adminCli(cp.url, tokenFile)

          // tokens: mint, list, revoke
          const minted = yield* run([
            "tokens",
            "mint",
            "--role",
            "mesh:role:node",
            "--max-usages",
            "3",
            "--description",
            "rack 7",
          ])
          expect(minted.status, minted.stderr).toBe(0)
          const token = /^token\s+(\S+)/m.exec(minted.stdout)?.[1] ?? ""
          const id = /^id\s+(bt_\S+)/m.exec(minted.stdout)?.[1] ?? ""
          expect(token.length).toBeGreaterThan(20)
          expect(minted.stdout).toContain("shown only now")
          const listed = yield* run(["tokens", "list"])
          expect(listed.status, listed.stderr).toBe(0)
          expect(lines(listed.stdout)[0]).toMatch(/^ID\s+ROLE\s+STATE\s+USED\s+EXPIRES\s+DESCRIPTION$/)
          expect(listed.stdout).toMatch(new RegExp(`${id}\\s+mesh:role:node\\s+active\\s+0/3\\s+\\S+\\s+rack 7`))
          expect(listed.stdout).not.toContain(token)

          // approvals: two peers wait; one is approved, one rejected
          const [first, second] = [PeerKey.generate(), PeerKey.generate()]
          for (const peer of [first, second]) {
            expect((yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token))).status).toBe(
              EnrollmentStatus.PENDING,
            )
          }
          const [pending, table] = yield* Effect.all(
            [run(["approvals", "list", "--json"]), run(["approvals", "list"])],
            {
              concurrency: "unbounded",
            },
          )
          expect(pending.status, pending.stderr).toBe(0)
          const requests = JSON.parse(pending.stdout) as ReadonlyArray<{ id: string; peer_id: string }>
          expect(requests.map((r) => r.peer_id).sort()).toEqual([first.peerId, second.peerId].sort())
          const idOf = (peer: PeerKey.PeerKey) => requests.find((r) => r.peer_id === peer.peerId)?.id ?? ""
          expect(table.stdout).toContain(idOf(first))
          const approved = yield* run(["approvals", "approve", "--id", idOf(first)])
          expect(approved.status, approved.stderr).toBe(0)
          expect(approved.stdout.trim()).toMatch(new RegExp(`^${idOf(first)}: approved; peer ${first.peerId}`))
          const rejected = yield* run(["approvals", "reject", "--id", idOf(second)])
          expect(rejected.stdout.trim()).toMatch(new RegExp(`^${idOf(second)}: rejected;`))
          yield* MeshClient.enrollStatus(cp.url, first)
          const [twice, revoked, nodes] = yield* Effect.all(
            [
              run(["approvals", "reject", "--id", idOf(second)]),
              run(["tokens", "revoke", "--id", id]),
              run(["nodes", "list"]),
            ],
            { concurrency: "unbounded" },
          )
          expect(twice.status).toBe(1)
          expect(lines(twice.stderr)).toHaveLength(1)
          expect(twice.stderr).toContain("(409)")
          expect(revoked.stdout.trim()).toBe(`revoked ${id} (state: revoked)`)

          // nodes: the approved peer is listed once it collects its credential; ban and unban it
          expect(nodes.status, nodes.stderr).toBe(0)
          expect(nodes.stdout).toMatch(new RegExp(`${first.peerId}\\s+admitted\\s+mesh:role:node`))
          const ban = yield* run(["nodes", "ban", "--peer", first.peerId])
          expect(ban.stdout.trim()).toBe(`banned ${first.peerId}; announced to running routers and nodes`)
          expect((yield* run(["nodes", "list"])).stdout).toMatch(new RegExp(`${first.peerId}\\s+banned`))
          const unban = yield* run(["nodes", "unban", "--peer", first.peerId])
          expect(unban.stdout.trim()).toBe(`unbanned ${first.peerId}; announced to running routers and nodes`)
          const unknown = yield* run(["nodes", "ban", "--peer", "12D3KooWNope"])
          expect(unknown.status).toBe(1)
          expect(lines(unknown.stderr)).toEqual(["mesh-control-plane: POST /admin/revoke: no such node (404)"])

          // policy: apply a file, read it back, and a refusal pointed at its line
          const good = join(dir, "policy.yaml")
          writeFileSync(good, GOOD_POLICY)
          const applied = yield* run(["policy", "apply", "--file", good])
          expect(applied.status, applied.stderr).toBe(0)
          expect(applied.stdout.trim()).toBe(`policy applied from ${good}: now version 1`)
          const got = yield* run(["policy", "get"])
          expect(got.stdout).toContain("# mesh policy version 1")
          expect(got.stdout).toContain("allowed_services:\n      - mcp://*")
          expect(got.stdout).toContain("- user:alice")
          const regot = join(dir, "again.yaml")
          writeFileSync(regot, got.stdout)
          expect((yield* run(["policy", "apply", "--file", regot])).stdout).toContain("now version 2")
          const bad = join(dir, "refused.yaml")
          writeFileSync(bad, REFUSED_POLICY)
          const badJson = join(dir, "refused.json")
          writeFileSync(badJson, '{\n  "roles": [\n    { "name": "r", "allowed_services": ["ftp"] }\n  ]\n}\n')
          const broken = join(dir, "broken.yaml")
          writeFileSync(broken, "roles:\n  - name: [unclosed\n")
          const [refused, refusedJson, syntax, status] = yield* Effect.all(
            [
              run(["policy", "apply", "--file", bad]),
              run(["policy", "apply", "--file", badJson]),
              run(["policy", "apply", "--file", broken]),
              run(["status"]),
            ],
            { concurrency: "unbounded" },
          )
          expect(refused.status).toBe(1)
          expect(lines(refused.stderr)).toEqual([
            `mesh-control-plane: ${bad}:8:9: policy refused: bindings[0].members[1]: member "user:https://elsewhere.example|bob" names issuer "https://elsewhere.example", which is not configured`,
          ])
          expect(lines(refusedJson.stderr)).toEqual([
            `mesh-control-plane: ${badJson}:3:41: policy refused: roles[0].allowed_services[0]: role "r": service "ftp" is not * or type://name`,
          ])
          expect(syntax.status).toBe(1)
          expect(syntax.stderr).toMatch(new RegExp(`^mesh-control-plane: ${broken}:\\d+:\\d+: not YAML or JSON: `))

          // status
          expect(status.status, status.stderr).toBe(0)
          expect(status.stdout).toMatch(/^nodes\s+1$/m)
          expect(status.stdout).toMatch(/^policy version\s+2 /m)
          expect(status.stdout).toContain(`control plane      ${cp.url}`)
        }),
      ),
    { timeout: 600_000 },
  )

  it.live(
    "a refused token, an unreachable URL and a missing flag each fail in one line that says which",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* ControlPlaneHarness.make({})
          const dir = yield* workDir
          const wrongFile = join(dir, "wrong-token")
          writeFileSync(wrongFile, "not-the-admin-token\n", { mode: 0o600 })
          const closed = `http://127.0.0.1:${yield* Effect.promise(freePort)}`
          const [wrong, unreachable, missing] = yield* Effect.all(
            [
              adminCli(cp.url, wrongFile)(["status"]),
              adminCli(closed, wrongFile)(["tokens", "list"]),
              Effect.promise(() =>
                runBin("mesh-control-plane", ["admin", "nodes", "list", "--admin-token-path", wrongFile], {
                  MESH_CONTROL_PLANE: "",
                }),
              ),
            ],
            { concurrency: "unbounded" },
          )
          expect(wrong.status).toBe(1)
          expect(lines(wrong.stderr)).toEqual([
            `mesh-control-plane: the control plane at ${cp.url} refused the admin token from ${wrongFile}: an admin token is required as Authorization: Bearer`,
          ])
          expect(unreachable.status).toBe(1)
          expect(lines(unreachable.stderr)).toEqual([
            `mesh-control-plane: cannot reach the control plane at ${closed}: connect ECONNREFUSED ${closed.slice("http://".length)}`,
          ])
          expect(missing.status).toBe(2)
          expect(lines(missing.stderr)).toEqual([
            "mesh-control-plane: --control-plane is required (or MESH_CONTROL_PLANE)",
          ])
          // A secret never reaches the output, even the wrong one.
          expect(`${wrong.stderr}${unreachable.stderr}`).not.toContain("not-the-admin-token")
        }),
      ),
    { timeout: 120_000 },
  )
})

import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { mintToken, setPolicy } from "../support/admin.js"
import { nodeArgs } from "../support/processes.js"

const dir = mkdtempSync(join(tmpdir(), "mesh-node-test-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Runs `mesh-node` without blocking this process, which serves the control plane the command talks to. */
const meshNode = (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    promisify(execFile)(process.execPath, nodeArgs("mesh-node", args), { timeout: 120_000 }).then(
      (out) => ({ code: 0, stdout: out.stdout, stderr: out.stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: error.code ?? -1,
        stdout: error.stdout ?? "",
        stderr: error.stderr ?? "",
      }),
    ),
  )

describe("mesh-node join", () => {
  it.live("a corrupt identity or credential file in the data folder is one clear line and exit 1", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [string, string, string]> = [
        [
          "identity.json",
          '{"seed": "zz',
          "is not a valid identity file; restore it, or remove it to enroll as a new node",
        ],
        ["credential.json", '{"credential": 42}', "is not a valid credential file; remove it to enroll again"],
      ]
      for (const [file, content, reason] of cases) {
        const dataDir = join(dir, `corrupt-${file}`)
        mkdirSync(dataDir, { recursive: true })
        if (file !== "identity.json") {
          writeFileSync(join(dataDir, "identity.json"), JSON.stringify({ seed: "ab".repeat(32) }), { mode: 0o600 })
        }
        writeFileSync(join(dataDir, file), content, { mode: 0o600 })
        const out = yield* meshNode(["join", "--control-plane", "http://127.0.0.1:1", "--data-dir", dataDir])
        expect(out.code, out.stderr).toBe(1)
        expect(out.stderr.trim().split("\n")).toEqual([`mesh-node: ${join(dataDir, file)} ${reason}`])
      }
    }),
  )

  it.live("enrolls with a bootstrap token and labels, stores the identity 0600, and joins again without one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*"] }] })
        const token = yield* mintToken(cp)
        const tokenFile = join(dir, "token")
        writeFileSync(tokenFile, token.token, { mode: 0o600 })
        const dataDir = join(dir, "node")
        const first = yield* meshNode([
          "join",
          "--control-plane",
          cp.url,
          "--data-dir",
          dataDir,
          "--bootstrap-token-path",
          tokenFile,
          "--labels",
          "zone=eu",
          "--log-level",
          "warn",
        ])
        expect(first.code, first.stderr).toBe(0)
        const peerId = /peer id\s+(\S+)/.exec(first.stdout)?.[1]
        expect(peerId).toMatch(/^12D3KooW/)
        expect(statSync(join(dataDir, "credential.json")).mode & 0o777).toBe(0o600)
        expect(readFileSync(join(dataDir, "credential.json"), "utf8")).not.toContain(token.token)
        const status = yield* MeshClient.json(cp.url, "GET", "/admin/status", cp.adminToken)
        expect(JSON.stringify(status.json)).toContain(peerId)

        // The single-use token is spent; the stored credential is enough to be the same node again.
        const again = yield* meshNode(["join", "--control-plane", cp.url, "--data-dir", dataDir, "--log-level", "warn"])
        expect(again.code, again.stderr).toBe(0)
        expect(again.stdout).toContain(`peer id      ${peerId}`)

        const refused = yield* meshNode([
          "join",
          "--control-plane",
          cp.url,
          "--data-dir",
          join(dir, "other"),
          "--bootstrap-token-path",
          tokenFile,
        ])
        expect(refused.code).toBe(1)
        expect(refused.stderr.trim().split("\n").at(-1)).toBe(
          "mesh-node: control plane refused (410 gone): bootstrap token has no usages left",
        )
      }),
    ),
  )
})

describe("mesh-node run limits", () => {
  it.live("a response cap under 64 KiB or a zero time-to-headers limit is one line and exit 2", () =>
    Effect.gen(function* () {
      const dataDir = join(dir, "limits")
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [
          ["--max-response-bytes", "12"],
          'mesh-node: --max-response-bytes: "12" is not a whole number of bytes, at least 65536',
        ],
        [["--inference-headers-timeout", "0"], "mesh-node: --inference-headers-timeout must be longer than 0"],
      ]
      for (const [flags, line] of cases) {
        const out = yield* meshNode(["run", "--data-dir", dataDir, ...flags])
        expect(out.code, out.stderr).toBe(2)
        expect(out.stderr.trim().split("\n")).toEqual([line])
      }
      mkdirSync(dataDir, { recursive: true })
      writeFileSync(join(dataDir, "mesh-node.yaml"), "max_response_bytes: 5\n")
      const file = yield* meshNode(["run", "--data-dir", dataDir])
      expect(file.code, file.stderr).toBe(2)
      expect(file.stderr.trim().split("\n")).toEqual([
        `mesh-node: ${join(dataDir, "mesh-node.yaml")}: max_response_bytes: must be a whole number of bytes, at least 65536`,
      ])
    }),
  )
})

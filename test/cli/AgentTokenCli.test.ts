/** `mesh-node agent-token` as a separate process against a node's socket: the token to a 0600 file or stdout. */
import { execFile } from "node:child_process"
import { readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import { tcp } from "../node/support.js"
import { nodeArgs } from "../support/processes.js"

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

describe("mesh-node agent-token", () => {
  it.live("mints over the node's socket: to a 0600 file, or to stdout alone; refusals are one line", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
        const node = yield* NodeHarness.make(cp)
        yield* node.peerId
        const out = join(node.dataDir, "ide.token")
        const args = ["agent-token", "--socket-path", node.socketPath, "--agent", "ide"]
        const written = yield* meshNode([...args, "--tool", "mcp://demo/word_count", "--ttl", "10m", "--out", out])
        expect(written.code, written.stderr).toBe(0)
        expect(written.stdout).toBe("")
        expect(written.stderr).toContain("agent token for ide written to")
        expect(statSync(out).mode & 0o777).toBe(0o600)
        const printed = yield* meshNode([...args, "--service", "a2a://echo", "--method", "get"])
        expect(printed.code, printed.stderr).toBe(0)
        const token = printed.stdout.trim()
        expect(token.split("\n")).toHaveLength(1)
        expect(token).not.toBe(readFileSync(out, "utf8").trim())
        // The node knows its own token: an agent's, refused only because the route is the operator's.
        for (const presented of [token, readFileSync(out, "utf8").trim()]) {
          const reply = yield* tcp(node, "/debug/token-info", {
            headers: { "x-mesh-authentication": `Bearer ${presented}` },
          })
          expect(reply.status).toBe(403)
          expect(reply.text).toContain("an agent token reaches only")
        }
        const refused = yield* meshNode([...args, "--tool", "demo/word_count"])
        expect(refused.code).toBe(2)
        expect(refused.stderr.trim()).toBe(
          "mesh-node: the node refused: tool pattern demo/word_count must be mcp://<service>/<tool>",
        )
        const away = yield* meshNode(["agent-token", "--socket-path", join(node.dataDir, "none.sock"), "--agent", "x"])
        expect(away.code).toBe(1)
        expect(away.stderr).toContain("is it running?")
      }),
    ),
  )
})

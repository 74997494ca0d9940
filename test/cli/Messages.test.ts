/**
 * The messages a user meets when something is not right yet, from the real programs: a control plane that does not
 * answer (named with its URL and why), a node left to wait for a login (told how, and whether the control plane
 * answers), retry warnings without stack traces, and `join` waiting for an operator's approval (what to approve,
 * where, how often it asks; on Ctrl-C, that the request stays queued and how to resume, exit 130).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import { freePort } from "../../src/testing/Ports.js"
import { admin, mintToken } from "../support/admin.js"
import { nodeArgs } from "../support/processes.js"

const dir = mkdtempSync(join(tmpdir(), "mesh-messages-test-"))
const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const start = (name: string, args: ReadonlyArray<string>) => {
  const child = spawn(process.execPath, nodeArgs(name, args), { stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  const out = { stdout: "", stderr: "" }
  child.stdout?.on("data", (c: Buffer) => {
    out.stdout += c.toString()
  })
  child.stderr?.on("data", (c: Buffer) => {
    out.stderr += c.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, out, exited }
}

/** Waits until `text` appears in what `read` returns (60 s: a child on a loaded machine starts slowly). */
const waitForText = async (read: () => string, text: string) => {
  for (let i = 0; i < 600; i++) {
    if (read().includes(text)) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${JSON.stringify(text)} in:\n${read()}`)
}

const STACK_LINE = /^\s+at /m

/** Each test starts a program and may wait a minute for a line: room for a loaded machine. */
const TIMEOUT = 150_000

describe("a control plane that does not answer", () => {
  it(
    "join names the URL it asked and why it failed",
    async () => {
      const port = await freePort()
      const tokenFile = join(dir, "token-dead")
      writeFileSync(tokenFile, "mesh-bt-00000000000000000000000000000000\n", { mode: 0o600 })
      const join_ = start("mesh-node", [
        "join",
        "--control-plane",
        `http://127.0.0.1:${port}`,
        "--data-dir",
        join(dir, "join-dead"),
        "--bootstrap-token-path",
        tokenFile,
      ])
      expect(await join_.exited).toBe(1)
      expect(join_.out.stderr.trim()).toBe(
        `mesh-node: control plane unreachable: http://127.0.0.1:${port}/enroll: fetch failed: connect ECONNREFUSED 127.0.0.1:${port}`,
      )
    },
    TIMEOUT,
  )

  it(
    "a node run with a token warns on each retry with the URL and the cause, and no stack trace",
    async () => {
      const port = await freePort()
      const tokenFile = join(dir, "token-run")
      writeFileSync(tokenFile, "mesh-bt-00000000000000000000000000000000\n", { mode: 0o600 })
      const node = start("mesh-node", [
        "run",
        "--control-plane",
        `http://127.0.0.1:${port}`,
        "--data-dir",
        join(dir, "run-dead"),
        "--bind-addr",
        "",
        "--bootstrap-token-path",
        tokenFile,
      ])
      await waitForText(() => node.out.stderr, "joining the mesh failed; retrying")
      node.child.kill("SIGTERM")
      await node.exited
      const warning = node.out.stderr.split("\n").find((line) => line.includes("joining the mesh failed")) ?? ""
      expect(warning).toContain(
        `error="control plane unreachable: http://127.0.0.1:${port}/enroll: fetch failed: connect ECONNREFUSED 127.0.0.1:${port}"`,
      )
      expect(node.out.stderr).not.toMatch(STACK_LINE)
    },
    TIMEOUT,
  )

  it(
    "a node run without a token says it waits for a login, how to log in, and that the control plane does not answer",
    async () => {
      const port = await freePort()
      const dataDir = join(dir, "login-dead")
      const node = start("mesh-node", [
        "run",
        "--control-plane",
        `http://127.0.0.1:${port}`,
        "--data-dir",
        dataDir,
        "--bind-addr",
        "",
      ])
      await waitForText(() => node.out.stderr, "control plane unreachable")
      node.child.kill("SIGTERM")
      await node.exited
      expect(node.out.stderr).toContain(
        `message="not logged in to a mesh: serving only the login instructions until it is" log_in_with="mesh-node join --control-plane http://127.0.0.1:${port} --data-dir ${dataDir} --bootstrap-token-path <file>"`,
      )
      expect(node.out.stderr).toContain(
        `message="control plane unreachable: http://127.0.0.1:${port}/info: fetch failed: connect ECONNREFUSED 127.0.0.1:${port}"`,
      )
    },
    TIMEOUT,
  )
})

describe("mesh-node join waiting for approval", () => {
  it.scopedLive(
    "says what to approve, where and how often it asks; Ctrl-C says how to resume and exits 130",
    () =>
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: false })
        const token = yield* mintToken(cp)
        const tokenFile = join(dir, "token-approval")
        writeFileSync(tokenFile, `${token.token}\n`, { mode: 0o600 })
        const args = [
          "join",
          "--control-plane",
          cp.url,
          "--data-dir",
          join(dir, "waiting"),
          "--bootstrap-token-path",
          tokenFile,
        ]
        const waiting = start("mesh-node", args)
        yield* Effect.promise(() => waitForText(() => waiting.out.stdout, "polling"))
        const pending = yield* admin(cp, "GET", "/admin/enrollments?status=pending")
        const [request] = pending.json as Array<{ id: string; peer_id: string }>
        expect(request).toBeDefined()
        const { id, peer_id } = request as { id: string; peer_id: string }
        expect(waiting.out.stdout.trim().split("\n")).toEqual([
          "waiting for an operator to approve this node",
          `  peer id      ${peer_id}`,
          `  request      ${id}`,
          `  approve in   the console, ${cp.url}/console/#/approvals, or with the admin API:`,
          `               curl -X POST -H "Authorization: Bearer <admin token>" ${cp.url}/admin/enrollments/${id}/approve`,
          "  polling      every 30s; Ctrl-C stops waiting, the request stays queued",
        ])
        waiting.child.kill("SIGINT")
        expect(yield* Effect.promise(() => waiting.exited)).toBe(130)
        // Besides its log lines (stderr too), what join says.
        const said = waiting.out.stderr.split("\n").filter((line) => line !== "" && !line.startsWith("timestamp="))
        expect(said).toEqual([
          `stopped waiting: the request of ${peer_id} stays queued for approval.`,
          "To resume, run the same command again (the same data folder keeps the same peer id):",
          `  mesh-node ${args.join(" ")}`,
        ])
      }),
    TIMEOUT,
  )
})

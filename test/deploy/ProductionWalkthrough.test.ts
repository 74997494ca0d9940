/**
 * docs/production.md as an operator follows it: every fenced block marked ```sh step runs as written, in order, from
 * one folder, through `sh -e`, on postgres (MESH_TEST_PG_URL). Only what must differ on a shared test machine is
 * swapped: each fixed port for a free one, the `PG=` and `DB=` lines and the server's host:port for the test server
 * and a fresh database. Step 0 (installing) is replaced by a PATH on which each program runs built, and the
 * folder gets examples/policy.yaml as step 0 copies it. A block's marks say how it is run:
 *   background=NAME      a long-running program, started and left running (stopped at the end)
 *   until-lines=N        run again until it prints N lines
 *   until=TEXT           run again until its output has TEXT;  until-not=TEXT  until it no longer has TEXT
 *   expect=TEXT          its output must have TEXT
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import pg from "pg"
import { freePort } from "../../src/testing/Ports.js"
import { postgresUrl } from "../support/databases.js"
import { builtPath } from "../support/processes.js"
import { root } from "./support.js"

interface Step {
  readonly script: string
  readonly marks: Readonly<Record<string, string>>
}

/** The ```sh step blocks of a Markdown text, in order, with their marks (`key=value` or `key="a value"`). */
const steps = (markdown: string): ReadonlyArray<Step> =>
  [...markdown.matchAll(/^```sh step([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    script: m[2] ?? "",
    marks: Object.fromEntries(
      [...(m[1] ?? "").matchAll(/([a-z-]+)=(?:"([^"]*)"|(\S+))/g)].map((a) => [a[1], a[2] ?? a[3] ?? ""]),
    ),
  }))

const PORTS = [8080, 8081, 8082, 4001, 9090, 3001, 8000]
const PROGRAMS = ["mesh-control-plane", "mesh-router", "mesh-node", "mesh-demo"]

const doc = readFileSync(join(root, "docs", "production.md"), "utf8")

describe("docs/production.md", () => {
  it("marks its steps, with the marks the test knows", () => {
    const all = steps(doc)
    expect(all.length).toBeGreaterThanOrEqual(10)
    const known = new Set(["background", "until-lines", "until", "until-not", "expect"])
    for (const step of all) for (const mark of Object.keys(step.marks)) expect(known).toContain(mark)
    expect(all.filter((s) => s.marks.background !== undefined).map((s) => s.marks.background)).toEqual([
      "control-plane",
      "demo-mcp",
      "demo-model",
      "router",
      "node-a",
      "node-b",
    ])
    // No step relies on the checkout: the programs are the installed ones, never run through npm or from src/.
    for (const step of all) expect(step.script).not.toMatch(/npm (run|start)|src\/|tsx /)
  })
})

describe.skipIf(postgresUrl === undefined)("docs/production.md on postgres", () => {
  const dir = mkdtempSync(join(tmpdir(), "mesh-walkthrough-"))
  const running: Array<{ readonly name: string; readonly child: ChildProcess; log: string }> = []
  const database = `mesh_walkthrough_${process.pid}`
  const server = new URL(postgresUrl ?? "postgres://127.0.0.1:5432/test")
  const admin = new URL(server)
  admin.pathname = "/postgres"

  const dropDatabase = async () => {
    const client = new pg.Client({ connectionString: server.toString() })
    await client.connect()
    try {
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await client.query(`DROP ROLE IF EXISTS ${database}`)
    } finally {
      await client.end()
    }
  }

  afterAll(async () => {
    for (const { child } of running) {
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM")
        } catch {}
      }
    }
    await Promise.all(
      running.map(({ child }) =>
        child.exitCode !== null ? undefined : new Promise((done) => child.once("exit", done)),
      ),
    )
    await dropDatabase()
    rmSync(dir, { recursive: true, force: true })
  })

  it("runs from secrets to a ban, every command as written", { timeout: 230_000 }, async () => {
    await dropDatabase()
    const ports = new Map<number, number>()
    for (const port of PORTS) ports.set(port, await freePort())
    const swap = (script: string) =>
      script
        .replace(/^PG=.*$/m, `PG=${admin.toString()}`)
        .replace(/^DB=.*$/m, `DB=${database}`)
        .replaceAll("127.0.0.1:5432", server.host)
        .replace(new RegExp(`\\b(${PORTS.join("|")})\\b`, "g"), (p) => String(ports.get(Number(p))))

    // Step 0: the built programs on PATH, as an install puts them; the example policy in the folder.
    const bin = join(dir, ".bin")
    mkdirSync(bin, { recursive: true })
    for (const program of PROGRAMS) {
      const wrapper = join(bin, program)
      writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${builtPath(program)}" "$@"\n`, {
        mode: 0o755,
      })
    }
    const work = join(dir, "mesh")
    mkdirSync(work, { recursive: true })
    copyFileSync(join(root, "examples", "policy.yaml"), join(work, "policy.yaml"))
    const env = {
      ...process.env,
      PATH: [bin, dirname(process.execPath), process.env.PATH ?? ""].join(delimiter),
      npm_config_prefer_offline: "true",
      npm_config_update_notifier: "false",
    }

    const run = (script: string, timeout: number) =>
      new Promise<{ readonly code: number; readonly out: string }>((resolve) => {
        execFile("sh", ["-ec", script], { cwd: work, env, timeout }, (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : 1, out: `${stdout}${error === null ? "" : stderr}` }),
        )
      })
    const logs = () => running.map((r) => `--- ${r.name}\n${r.log.slice(-3000)}`).join("\n")
    const stillRunning = () => {
      for (const { name, child, log } of running) {
        if (child.exitCode !== null) throw new Error(`${name} stopped (exit ${child.exitCode}):\n${log}`)
      }
    }
    const repeat = async (script: string, done: (out: string) => boolean, seconds: number) => {
      let last = ""
      for (let i = 0; i < seconds; i++) {
        stillRunning()
        const result = await run(script, 30_000)
        last = result.out
        if (result.code === 0 && done(last)) return last
        await new Promise((r) => setTimeout(r, 1000))
      }
      throw new Error(`not done within ${seconds} s: ${script}\nlast output: ${last}\n${logs()}`)
    }

    for (const step of steps(doc)) {
      const script = swap(step.script)
      const { background, until, expect: expected } = step.marks
      if (background !== undefined) {
        const child = spawn("sh", ["-ec", script], { cwd: work, env, detached: true, stdio: "pipe" })
        const entry = { name: background, child, log: "" }
        child.stdout?.on("data", (c: Buffer) => {
          entry.log += c.toString()
        })
        child.stderr?.on("data", (c: Buffer) => {
          entry.log += c.toString()
        })
        running.push(entry)
        continue
      }
      if (step.marks["until-lines"] !== undefined) {
        const lines = Number(step.marks["until-lines"])
        await repeat(script, (out) => out.trim().split("\n").filter(Boolean).length >= lines, 90)
      } else if (until !== undefined) {
        await repeat(script, (out) => out.includes(until), 120)
      } else if (step.marks["until-not"] !== undefined) {
        const gone = step.marks["until-not"]
        await repeat(script, (out) => !out.includes(gone), 20)
      } else {
        const result = await run(script, 90_000)
        expect(result.code, `${script}\n${result.out}\n${logs()}`).toBe(0)
        if (expected !== undefined) expect(result.out).toContain(expected)
      }
      stillRunning()
    }
  })
})

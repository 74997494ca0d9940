/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance server --suite active`) run twice against the MCP
 * reference server `server-everything`: once directly, once through node A's proxy to node B publishing it
 * (issue 29, item 8). The proxy must add no failure, per scenario and per check, and DNS-rebinding protection, which
 * `server-everything` itself lacks, must pass through it. The suite's client sends no API token, so it talks to a
 * loopback forwarder that adds `X-Mesh-Authentication` and passes everything else, `Host` and `Origin` included,
 * unchanged: what an agent's HTTP client configured with the token sends.
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { dirname, join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { everything } from "./backends.js"
import { tokenForwarder } from "./forwarder.js"
import { eventually, mcpInitialize } from "./support.js"

const root = join(import.meta.dirname, "..", "..")
const CLI = join(root, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://everything"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

interface Check {
  readonly scenario: string
  readonly id: string
  readonly status: string
}

interface Run {
  readonly scenarios: number
  readonly checks: ReadonlyArray<Check>
  readonly output: string
}

/**
 * Runs the active suite against `url` to its end (asynchronously: the nodes it tests run in this process) and reads
 * the checks each scenario left in `server-<scenario>-<timestamp>/checks.json`.
 */
const conformance = (url: string) =>
  Effect.gen(function* () {
    const dir = yield* NodeHarness.tempDir
    const output = yield* Effect.async<string>((resume) => {
      const child = spawn(process.execPath, [CLI, "server", "--url", url, "--suite", "active", "-o", dir], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      })
      let output = ""
      child.stdout.on("data", (chunk) => {
        output += chunk
      })
      child.stderr.on("data", (chunk) => {
        output += chunk
      })
      child.once("exit", () => resume(Effect.succeed(output)))
      return Effect.sync(() => child.kill("SIGTERM"))
    })
    const checks = readdirSync(dir, { recursive: true })
      .map(String)
      .filter((file) => file.endsWith("checks.json"))
      .flatMap((file) => {
        const scenario = dirname(file)
          .replace(/^server-/, "")
          .replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "")
        return (JSON.parse(readFileSync(join(dir, file), "utf8")) as Array<{ id: string; status: string }>).map(
          (check): Check => ({ scenario, id: check.id, status: check.status }),
        )
      })
    const scenarios = Number(/Running active suite \((\d+) scenarios\)/.exec(output)?.[1] ?? 0)
    return { scenarios, checks, output } satisfies Run
  })

/** Every check as `scenario: id` with its status, in a stable order. */
const byCheck = (run: Run) => run.checks.map((check) => `${check.scenario}: ${check.id}: ${check.status}`).sort()

/** The scenarios that left checks and none of them failed. */
const passing = (run: Run) => {
  const failed = new Set(run.checks.filter((check) => check.status === "FAILURE").map((check) => check.scenario))
  return [...new Set(run.checks.map((check) => check.scenario))].filter((scenario) => !failed.has(scenario)).sort()
}

const tally = (run: Run) => {
  const passed = run.checks.filter((check) => check.status === "SUCCESS").length
  const failed = run.checks.filter((check) => check.status === "FAILURE").length
  return `${passing(run).length}/${run.scenarios} scenarios pass; checks ${passed} passed, ${failed} failed`
}

describe("MCP conformance through the proxy", () => {
  it.live(
    "the proxy adds no failure to server-everything's active-suite results and adds DNS-rebinding protection",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const mcp = yield* everything
          const direct = yield* conformance(mcp.url)

          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          yield* setPolicy(cp, POLICY)
          yield* RouterHarness.make(cp)
          const b = yield* NodeHarness.make(cp, {
            file: {
              labels: {},
              egress: { require_labels: {} },
              services: [{ name: "everything", type: "mcp", description: "", target_url: mcp.url, env: {} }],
            },
          })
          const a = yield* NodeHarness.make(cp)
          yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
          const path = `/mesh/${yield* b.peerId}/mcp/everything`
          // A holds B's policy-checked route once B has the policy: the first initialize that passes.
          yield* eventually(
            60,
            Effect.promise(() =>
              fetch(`${a.url}${path}`, {
                method: "POST",
                headers: {
                  "x-mesh-authentication": `Bearer ${a.apiToken}`,
                  "content-type": "application/json",
                  accept: "application/json, text/event-stream",
                },
                body: JSON.stringify(mcpInitialize),
              }).then((r) => r.body?.cancel().then(() => r.status) ?? r.status),
            ),
            (status) => status === 200,
          )
          const forwarder = yield* tokenForwarder(new URL(a.url), a.apiToken)
          const proxied = yield* conformance(`http://127.0.0.1:${(forwarder.address() as AddressInfo).port}${path}`)

          console.log(
            `MCP conformance, active suite, server-everything\n  direct:            ${tally(direct)}\n  through the proxy: ${tally(proxied)}`,
          )
          // Both runs ran the whole suite, every scenario leaving its checks, and some pass directly: a run that
          // broke before its scenarios cannot pass the comparisons below by having nothing to compare.
          for (const run of [direct, proxied]) {
            expect(run.scenarios, run.output.slice(-2000)).toBeGreaterThanOrEqual(30)
            expect(new Set(run.checks.map((check) => check.scenario)).size).toBe(run.scenarios)
          }
          expect(passing(direct)).toEqual(expect.arrayContaining(["server-initialize", "tools-call-simple-text"]))
          // (1) Whatever passes directly passes through the proxy: per scenario, and per check.
          expect(passing(direct).filter((scenario) => !passing(proxied).includes(scenario))).toEqual([])
          const proxiedChecks = byCheck(proxied)
          expect(
            byCheck(direct).filter((check) => check.endsWith(": SUCCESS") && !proxiedChecks.includes(check)),
          ).toEqual([])
          // (2) The node's local API refuses a foreign Host/Origin, which server-everything alone does not.
          expect(
            proxied.checks
              .filter((check) => check.scenario === "dns-rebinding-protection")
              .map((check) => `${check.id}: ${check.status}`)
              .sort(),
          ).toEqual(["localhost-host-rebinding-rejected: SUCCESS", "localhost-host-valid-accepted: SUCCESS"])
        }),
      ),
    300_000,
  )
})

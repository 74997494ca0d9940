/**
 * The MCP conformance suite for the 2026-07-28 revision (`@modelcontextprotocol/conformance` 0.2.0-alpha.12,
 * `server --requirements 2026-07-28`) against node A's own `/mcp` (issue 50, item 1). The node's server has its six
 * tools and the federated ones, not the suite's fixture tools, prompts and resources: the scenarios that need those
 * fail for want of them and are listed below, with why; every other scenario must pass. The tallies are printed. The
 * suite's client sends no API token, so it talks to a loopback forwarder that adds `X-Mesh-Authentication` and passes
 * everything else, `Host` and `Origin` included, unchanged.
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
import { tokenForwarder } from "./forwarder.js"

const root = join(import.meta.dirname, "..", "..")
const CLI = join(root, "node_modules", "@modelcontextprotocol", "conformance-next", "dist", "index.js")

/**
 * Scenarios that need what a mesh node does not have, each failing on the missing thing, not on the protocol: the
 * suite's fixture tools (`test_image_content`, `test_tool_with_progress`, the `input_required` ones, the diagnostic
 * `test_missing_capability`, a tool with `x-mcp-header` annotations, a JSON Schema 2020-12 tool), prompts, resources
 * and completions (the node serves tools only), and the tasks extension (the node's tools answer within the call).
 */
const NEEDS_FIXTURES = new Set([
  "completion-complete",
  "http-custom-header-server-validation",
  "input-required-result-basic-elicitation",
  "input-required-result-basic-list-roots",
  "input-required-result-basic-sampling",
  "input-required-result-capability-check",
  "input-required-result-multi-round",
  "input-required-result-multiple-input-requests",
  "input-required-result-non-tool-request",
  "input-required-result-request-state",
  "input-required-result-result-type",
  "input-required-result-tampered-state",
  "json-schema-2020-12",
  "prompts-get-embedded-resource",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-with-image",
  "prompts-list",
  "resources-list",
  "resources-read-binary",
  "resources-read-text",
  "resources-templates-read",
  "tasks-capability-negotiation",
  "tasks-dispatch-and-envelope",
  "tasks-lifecycle",
  "tasks-mrtr-composition",
  "tasks-mrtr-input",
  "tasks-request-headers",
  "tasks-request-state-removal",
  "tasks-required-task-error",
  "tasks-wire-fields",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-image",
  "tools-call-mixed-content",
  "tools-call-with-progress",
])

/**
 * Single checks of scenarios that otherwise apply, failing for the same reasons: `caching` also asks for the prompt
 * and resource lists' hints (the tool list's pass), `server-stateless` calls its diagnostic fixture tool.
 */
const NEEDS_FIXTURES_CHECKS = new Set([
  "caching: sep-2549-prompts-list-caching-hints",
  "caching: sep-2549-resources-list-caching-hints",
  "caching: sep-2549-resources-templates-list-caching-hints",
  "server-stateless: sep-2575-server-rejects-undeclared-capability",
  "server-stateless: sep-2575-missing-capability-http-400",
])

interface Check {
  readonly scenario: string
  readonly id: string
  readonly status: string
  readonly message: string
}

interface Run {
  readonly checks: ReadonlyArray<Check>
  readonly output: string
}

const conformance = (url: string) =>
  Effect.gen(function* () {
    const dir = yield* NodeHarness.tempDir
    const output = yield* Effect.async<string>((resume) => {
      const child = spawn(
        process.execPath,
        [CLI, "server", "--url", url, "--requirements", "2026-07-28", "--timeout", "10000", "-o", dir],
        { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
      )
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
        return (
          JSON.parse(readFileSync(join(dir, file), "utf8")) as Array<{
            id: string
            status: string
            errorMessage?: string
          }>
        ).map(
          (check): Check => ({
            scenario,
            id: check.id,
            status: check.status,
            message: check.errorMessage ?? "",
          }),
        )
      })
    return { checks, output } satisfies Run
  })

const scenarios = (run: Run) => [...new Set(run.checks.map((check) => check.scenario))].sort()
const failing = (run: Run) =>
  [...new Set(run.checks.filter((c) => c.status === "FAILURE").map((c) => c.scenario))].sort()

describe("MCP conformance, 2026-07-28, against the node's /mcp", () => {
  it.live(
    "every scenario that does not need the suite's fixtures passes",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          yield* RouterHarness.make(cp)
          const a = yield* NodeHarness.make(cp)
          yield* a.connected
          const forwarder = yield* tokenForwarder(new URL(a.url), a.apiToken)
          const run = yield* conformance(`http://127.0.0.1:${(forwarder.address() as AddressInfo).port}/mcp`)
          const all = scenarios(run)
          const failed = failing(run)
          const passed = all.filter((s) => !failed.includes(s))
          const checksPassed = run.checks.filter((c) => c.status === "SUCCESS").length
          const checksFailed = run.checks.filter((c) => c.status === "FAILURE").length
          console.log(
            [
              "MCP conformance 0.2.0-alpha.12, server --requirements 2026-07-28, node A's /mcp",
              `  ${passed.length}/${all.length} scenarios pass; checks ${checksPassed} passed, ${checksFailed} failed`,
              `  passing: ${passed.join(", ")}`,
              `  failing: ${failed.join(", ")}`,
              ...run.checks
                .filter((c) => c.status === "FAILURE")
                .map((c) => `    ${c.scenario}: ${c.id}: ${c.message.slice(0, 200)}`),
            ].join("\n"),
          )
          expect(all.length, run.output.slice(-3000)).toBeGreaterThanOrEqual(30)
          const unexplained = run.checks.filter(
            (c) =>
              c.status === "FAILURE" &&
              !NEEDS_FIXTURES.has(c.scenario) &&
              !NEEDS_FIXTURES_CHECKS.has(`${c.scenario}: ${c.id}`),
          )
          expect(unexplained.map((c) => `${c.scenario}: ${c.id}: ${c.message}`)).toEqual([])
          // What the node's own server must do passes, scenario by scenario; caching and server-stateless check by check.
          expect(passed).toEqual(
            expect.arrayContaining([
              "dns-rebinding-protection",
              "http-header-validation",
              "server-sse-multiple-streams",
              "tools-list",
            ]),
          )
          for (const scenario of ["caching", "server-stateless"]) {
            expect(
              run.checks.filter((c) => c.scenario === scenario && c.status === "SUCCESS").length,
              scenario,
            ).toBeGreaterThan(0)
          }
        }),
      ),
    600_000,
  )
})

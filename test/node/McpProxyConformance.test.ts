/**
 * The MCP conformance suites through node A's proxy to a service published by node B (issue 50, item 5): the 2025
 * suite's active scenarios against a 2025-era server holding the suite's fixture tools (sampling, elicitation,
 * logging, progress, resources, prompts), which must pass whole through the proxy as they do directly, and the
 * 2026-07-28 suite against a modern-only server (`legacy: 'reject'`), where every check that passes directly must pass
 * through the proxy; the checks it fails directly are those needing the suite's own fixture tools (diagnostic tools,
 * sampling and elicitation fixtures, tasks). Ten 2025 runs in a row are in test/mesh/McpProxyConformanceSoak.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Conformance from "./conformance.js"

describe("MCP conformance suites through the proxy", () => {
  it.live(
    "the 2025 active suite passes whole through the proxy against a server with the suite's fixture tools",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* Conformance.fixture("mcpFixtureServer.mjs")
          const SUITE = ["--suite", "active"]
          const direct = yield* Conformance.run("2025", server.url, SUITE)
          const mesh = yield* Conformance.meshTo(server.url)
          const proxied = yield* Conformance.run("2025", mesh.url, SUITE)
          console.log(
            `MCP conformance 0.1.16, active suite, fixture server\n  direct:            ${Conformance.tally(direct)}\n  through the proxy: ${Conformance.tally(proxied)}`,
          )
          for (const run of [direct, proxied]) {
            expect(run.scenarios, run.output.slice(-2000)).toBeGreaterThanOrEqual(30)
            expect(new Set(run.checks.map((check) => check.scenario)).size).toBe(run.scenarios)
            expect(Conformance.failing(run), run.output.slice(-3000)).toEqual([])
          }
        }),
      ),
    300_000,
  )

  it.live(
    "the 2026-07-28 suite through the proxy against a modern-only server: whatever passes directly passes",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* Conformance.fixture("mcpModernServer.mjs")
          const args = ["--requirements", "2026-07-28"]
          const direct = yield* Conformance.run("2026", server.url, args)
          const mesh = yield* Conformance.meshTo(server.url)
          const proxied = yield* Conformance.run("2026", mesh.url, args)
          console.log(
            `MCP conformance 0.2.0-alpha.12, --requirements 2026-07-28, modern-only server\n  direct:            ${Conformance.tally(direct)}\n  through the proxy: ${Conformance.tally(proxied)}`,
          )
          expect(new Set(proxied.checks.map((check) => check.scenario)).size, proxied.output.slice(-2000)).toBe(
            new Set(direct.checks.map((check) => check.scenario)).size,
          )
          // What needs no fixture tool passes directly; the header ladder, stateless serving and caching among them.
          expect(Conformance.passing(direct)).toEqual(
            expect.arrayContaining([
              "tools-list",
              "tools-call-simple-text",
              "caching",
              "dns-rebinding-protection",
              "http-header-validation",
              "sep-2164-resource-not-found",
            ]),
          )
          expect(Conformance.passing(direct).filter((s) => !Conformance.passing(proxied).includes(s))).toEqual([])
          const proxiedChecks = new Set(proxied.checks.map(Conformance.key))
          expect(
            direct.checks
              .filter((c) => c.status === "SUCCESS" && !proxiedChecks.has(Conformance.key(c)))
              .map(Conformance.key),
          ).toEqual([])
        }),
      ),
    300_000,
  )
})

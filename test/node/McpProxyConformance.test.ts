/**
 * The 2026-07-28 MCP conformance suite (0.2.0-alpha.12, `--requirements 2026-07-28`) through node A's proxy to a
 * modern-only server (`legacy: 'reject'`) published by node B (issue 50, item 5): every check that passes directly
 * must pass through the proxy; the checks it fails directly are those needing the suite's own fixture tools
 * (diagnostic tools, sampling and elicitation fixtures, tasks). The 2025 suite through the proxy, against a server
 * with that suite's fixture tools, runs ten times in a row in test/mesh/McpProxyConformanceSoak.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Conformance from "./conformance.js"

describe("MCP conformance suites through the proxy", () => {
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

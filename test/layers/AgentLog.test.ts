import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as AgentLogLive from "../../src/layers/agents/AgentLogLive.js"
import * as MetricsLive from "../../src/layers/operations/MetricsLive.js"
import type { Call } from "../../src/services/agents/AgentLog.js"
import { Metrics } from "../../src/services/operations/Metrics.js"

const call = (agent: string, outcome: Call["outcome"]): Call => ({
  agent,
  side: "local",
  peer: "12D3KooWPeer",
  service: "mcp://demo",
  target: "mcp://demo/word_count",
  outcome,
  rule: outcome === "denied" ? "scope.tools" : "",
  status: outcome === "denied" ? 403 : 200,
  duration_ms: 1,
  bytes_in: 10,
  bytes_out: 20,
})

const folder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "agent-log-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
)

describe("AgentLog", () => {
  it.scoped("rotates past its size, keeps KEEP old files, and reads across them filtered by agent and time", () =>
    Effect.gen(function* () {
      const dir = yield* folder
      const log = yield* AgentLogLive.make(dir, new Set(["ide"]), 2_000)
      for (let i = 0; i < 60; i++) {
        yield* log.record(call(i % 2 === 0 ? "ide" : "runner", "allowed"))
        yield* TestClock.adjust("1 second")
      }
      const files = readdirSync(dir).sort()
      expect(files).toEqual(["calls.log", "calls.log.1", "calls.log.2", "calls.log.3"])
      for (const f of files) {
        expect(statSync(join(dir, f)).size).toBeLessThanOrEqual(2_000)
        expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600)
      }
      const all = yield* log.read({ limit: 1000 })
      expect(all.length).toBeGreaterThan(20)
      expect(all.length).toBeLessThan(60)
      const times = all.map((e) => Date.parse(e.time))
      expect([...times].sort((a, b) => a - b)).toEqual(times)
      const ide = yield* log.read({ agent: "ide", limit: 1000 })
      expect(ide.every((e) => e.agent === "ide")).toBe(true)
      const last = times.at(-1) as number
      const recent = yield* log.read({ sinceMs: last - 4_000, limit: 1000 })
      expect(recent.length).toBe(5)
      expect((yield* log.read({ limit: 3 })).length).toBe(3)
    }).pipe(Effect.provide(MetricsLive.layer)),
  )

  it.scoped("counts local calls by configured agent and outcome; other agents as 'other'", () =>
    Effect.gen(function* () {
      const dir = yield* folder
      const log = yield* AgentLogLive.make(dir, new Set(["ide"]))
      yield* log.record(call("ide", "allowed"))
      yield* log.record(call("ide", "denied"))
      yield* log.record(call("minted-from-cli", "denied"))
      yield* log.record({ ...call("peer-agent", "allowed"), side: "serving" })
      const text = (yield* Metrics).render()
      expect(text).toContain('mesh_node_agent_calls_total{agent="ide",outcome="allowed"} 1')
      expect(text).toContain('mesh_node_agent_calls_total{agent="ide",outcome="denied"} 1')
      expect(text).toContain('mesh_node_agent_calls_total{agent="other",outcome="denied"} 1')
      expect(text).not.toContain("minted-from-cli")
      expect(text).not.toContain("peer-agent")
    }).pipe(Effect.provide(MetricsLive.layer)),
  )
})

/**
 * `tsx bench/mcp-cpu.ts [rounds]`: the CPU time (user + system, from /proc) nodes A and B spend per
 * `call_remote_tool` of an echo on B's MCP service, made by an MCP SDK client on A's `/mcp`, and per the same call
 * made straight to the backend (the backend's own share, for scale). As with bench/proxy-cpu.ts, CPU time moves far
 * less than latency with other work on the machine, so runs before and after a change compare on it.
 * `BENCH_PAUSE_S=<s>` waits that long before the measured rounds (after printing the nodes' pids), to attach
 * `strace -c` or `perf` to one of them. `BENCH_MODERN=1` puts a modern-only (2026-07-28) server behind B instead,
 * called straight by the SDK v2 client pinned to that revision. `BENCH_ONLY=<phase>` runs that phase alone (with
 * `MESH_CPU_PROF_DIR`, a profile of nothing else).
 */
import { performance } from "node:perf_hooks"
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Logger, LogLevel } from "effect"
import * as Local from "../test/scale/LocalApi.js"
import { cpuMs, sysMs } from "./lib/cpu.js"
import * as MeshNodes from "./lib/meshNodes.js"
import { freePort, start } from "./lib/processes.js"

const ROUNDS = Number(process.argv[2] ?? 1000)
const PAUSE_S = Number(process.env.BENCH_PAUSE_S ?? 0)
const TEXT = "x".repeat(64)
const MODERN = process.env.BENCH_MODERN === "1"
const ONLY = process.env.BENCH_ONLY

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const measure = (port: number, backendPid: number) =>
  Effect.gen(function* () {
    const mesh = yield* MeshNodes.make({
      b: [MeshNodes.service("mcp", "bench", `http://127.0.0.1:${port}/mcp`)],
      discover: [["mcp", "bench"]],
    })
    const pair = mesh.direct
    const pids = { a: yield* pair.from.pid, b: yield* pair.to.pid }
    const agent = new Client({ name: "bench", version: "1.0.0" })
    yield* Effect.promise(() =>
      agent.connect(new StreamableHTTPClientTransport(new URL(`${Local.BASE}/mcp`), { fetch: pair.fetch })),
    )
    const backendUrl = new URL(`http://127.0.0.1:${port}/mcp`)
    const straight = MODERN
      ? new ModernClient({ name: "bench", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
      : new Client({ name: "bench", version: "1.0.0" })
    yield* Effect.promise(() =>
      straight instanceof Client
        ? straight.connect(new StreamableHTTPClientTransport(backendUrl))
        : straight.connect(new ModernTransport(backendUrl)),
    )
    const viaMesh = async () => {
      const result = (await agent.callTool({
        name: "call_remote_tool",
        arguments: { peer_id: pair.toId, tool_name: "mcp://bench/echo", arguments: { text: TEXT } },
      })) as CallToolResult
      if (result.isError === true || textOf(result) !== TEXT) throw new Error(`call_remote_tool: ${textOf(result)}`)
    }
    /** A tool of A's own: what A's MCP server costs without a peer. */
    const ownTool = async () => {
      const result = (await agent.callTool({ name: "get_mesh_info", arguments: {} })) as CallToolResult
      if (result.isError === true) throw new Error(`get_mesh_info: ${textOf(result)}`)
    }
    const direct = async () => {
      const result = (await straight.callTool({ name: "echo", arguments: { text: TEXT } })) as CallToolResult
      if (textOf(result) !== TEXT) throw new Error("the direct call went wrong")
    }
    const phase = async (name: string, one: () => Promise<void>) => {
      for (let i = 0; i < Math.min(100, ROUNDS); i++) await one()
      if (PAUSE_S > 0) {
        process.stdout.write(`A ${pids.a}, B ${pids.b}, backend ${backendPid}: ${name} in ${PAUSE_S} s\n`)
        await new Promise((resolve) => setTimeout(resolve, PAUSE_S * 1000))
      }
      const before = { a: cpuMs(pids.a), b: cpuMs(pids.b), backend: cpuMs(backendPid) }
      const sysBefore = { a: sysMs(pids.a), b: sysMs(pids.b) }
      const started = performance.now()
      for (let i = 0; i < ROUNDS; i++) await one()
      const took = performance.now() - started
      const per = (pid: number, was: number) => ((cpuMs(pid) - was) / ROUNDS).toFixed(3)
      process.stdout.write(
        `${name}: A ${per(pids.a, before.a)} ms, B ${per(pids.b, before.b)} ms, backend ${per(backendPid, before.backend)} ms CPU per call (${ROUNDS} in ${(took / 1000).toFixed(1)} s); of it system: A ${((sysMs(pids.a) - sysBefore.a) / ROUNDS).toFixed(3)} ms, B ${((sysMs(pids.b) - sysBefore.b) / ROUNDS).toFixed(3)} ms\n`,
      )
    }
    yield* Effect.promise(async () => {
      if (ONLY === undefined || ONLY === "direct") await phase("direct", direct)
      if (ONLY === undefined || ONLY === "get_mesh_info") await phase("get_mesh_info", ownTool)
      if (ONLY === undefined || ONLY === "call_remote_tool") await phase("call_remote_tool", viaMesh)
    })
    yield* Effect.promise(() => Promise.all([agent.close(), straight.close()]))
  })

const port = await freePort()
const backend = await start(
  MODERN ? "bench/servers/modernMcp.ts" : "bench/servers/mcp.ts",
  [String(port)],
  `http://127.0.0.1:${port}/healthz`,
)
try {
  await Effect.runPromise(
    Effect.scoped(measure(port, backend.process.pid ?? 0)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)),
  )
} finally {
  await backend.stop()
}

/**
 * MCP between peers, every party in a process of its own (bench/lib/meshNodes.ts: control plane, router, nodes A
 * and B as `mesh-node run`; B's backend, a stateful MCP server; a bench peer for the baseline,
 * bench/lib/benchPeers.ts): an agent's `call_remote_tool` of an echo tool on node B, through node A's `/mcp` over
 * A's socket (A keeps its MCP session with B's service); the same echo called by the MCP SDK client straight to the
 * backend; and a bare stream open + 1 KiB echo to a bench peer (the goal's baseline). All run interleaved, one by
 * one, over established sessions and connections (A reaches B over a direct connection, as after discovery).
 * A also federates the service: the same echo called by its federated name (`bench__echo`) on A's `/mcp`, in the
 * same interleaved run, against `call_remote_tool`. "p99 added" is the p99 of per-pair differences.
 */
import { performance } from "node:perf_hooks"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Logger, LogLevel } from "effect"
import * as Local from "../test/scale/LocalApi.js"
import * as BenchPeers from "./lib/benchPeers.js"
import { goals } from "./lib/goals.js"
import * as MeshNodes from "./lib/meshNodes.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import { addedText, ms, percentile } from "./lib/stats.js"

const TEXT = "x".repeat(64)
const WARMUP = 100
const SAMPLES = 500

const timed = async (work: () => Promise<boolean>): Promise<number> => {
  const started = performance.now()
  if (!(await work())) throw new Error("a round trip went wrong")
  return performance.now() - started
}

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const client = async (url: string, fetcher?: typeof globalThis.fetch) => {
  const mcp = new Client({ name: "bench", version: "1.0.0" })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(url), fetcher === undefined ? {} : { fetch: fetcher }))
  return mcp
}

const measure = (port: number) =>
  Effect.gen(function* () {
    const backendUrl = `http://127.0.0.1:${port}`
    const [mesh, peers] = yield* Effect.all(
      [
        MeshNodes.make({
          b: [MeshNodes.service("mcp", "bench", `${backendUrl}/mcp`)],
          federateOnA: ["mcp://bench"],
          discover: [["mcp", "bench"]],
        }),
        BenchPeers.make(port),
      ],
      { concurrency: "unbounded" },
    )
    const a = mesh.direct
    const agent = yield* Effect.promise(() => client(`${Local.BASE}/mcp`, a.fetch))
    const straight = yield* Effect.promise(() => client(`${backendUrl}/mcp`))
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([agent.close(), straight.close()])))

    const viaMesh = async () => {
      const result = (await agent.callTool({
        name: "call_remote_tool",
        arguments: { peer_id: a.toId, tool_name: "mcp://bench/echo", arguments: { text: TEXT } },
      })) as CallToolResult
      return result.isError !== true && textOf(result) === TEXT
    }
    const federated = async () => {
      const result = (await agent.callTool({ name: "bench__echo", arguments: { text: TEXT } })) as CallToolResult
      return result.isError !== true && textOf(result) === TEXT
    }
    const direct = async () => {
      const result = (await straight.callTool({ name: "echo", arguments: { text: TEXT } })) as CallToolResult
      return textOf(result) === TEXT
    }
    // Federation lists the tool after its first round.
    const listedBy = Date.now() + 60_000
    while (!(yield* Effect.promise(() => agent.listTools())).tools.some((t) => t.name === "bench__echo")) {
      if (Date.now() > listedBy) return yield* Effect.dieMessage("A did not federate bench/echo within 60 s")
      yield* Effect.sleep("200 millis")
    }
    const rounds = {
      mesh: () => timed(viaMesh),
      federated: () => timed(federated),
      direct: () => timed(direct),
      stream: () => BenchPeers.echo(peers.direct),
    }
    type Kind = keyof typeof rounds
    const kinds = Object.keys(rounds) as Array<Kind>
    const samples = Object.fromEntries(kinds.map((k) => [k, [] as Array<number>])) as Record<Kind, Array<number>>
    yield* Effect.promise(async () => {
      for (let i = 0; i < WARMUP + SAMPLES; i++) {
        for (const kind of kinds) {
          const took = await rounds[kind]()
          if (i >= WARMUP) samples[kind].push(took)
        }
      }
    })
    const paths = yield* a.check("direct")
    peers.direct.check()

    const p50 = {
      mesh: percentile(samples.mesh, 0.5),
      federated: percentile(samples.federated, 0.5),
      direct: percentile(samples.direct, 0.5),
    }
    const federatedRatio = p50.federated / p50.mesh
    const stream50 = percentile(samples.stream, 0.5)
    const overhead = p50.mesh - p50.direct
    const interleaved = `${SAMPLES} of each, interleaved, after ${WARMUP}`
    return [
      {
        name: "MCP call_remote_tool overhead, echo tool (mesh p50 - direct p50)",
        figure: overhead,
        unit: "ms",
        baselineName: "stream open + 1 KiB echo p50",
        baseline: stream50,
        ratio: overhead / stream50,
        goal: `<= ${goals.mcp.overheadOverStream.toFixed(2)}`,
        met: overhead / stream50 <= goals.mcp.overheadOverStream,
        notes: `${interleaved}; ${addedText(samples.mesh, samples.direct)}; call_remote_tool through A's socket ${ms(samples.mesh)}; SDK client straight to the backend ${ms(samples.direct)}; bare stream to a bench peer ${ms(samples.stream)}; A→B ${paths.join(", ")}`,
      },
      {
        name: "MCP federated tools/call over call_remote_tool, echo tool (p50 / p50)",
        figure: p50.federated,
        unit: "ms",
        baselineName: "call_remote_tool p50",
        baseline: p50.mesh,
        ratio: federatedRatio,
        goal: `<= ${goals.federation.overCallRemoteTool.toFixed(2)}`,
        met: federatedRatio <= goals.federation.overCallRemoteTool,
        notes: `${SAMPLES} of each, interleaved in the run above; bench__echo on A's /mcp ${ms(samples.federated)}`,
      },
    ] satisfies ReadonlyArray<Entry>
  })

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const port = await freePort()
  const backend = await start("bench/servers/mcp.ts", [String(port)], `http://127.0.0.1:${port}/healthz`)
  try {
    return await Effect.runPromise(Effect.scoped(measure(port)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
  } finally {
    await backend.stop()
  }
}

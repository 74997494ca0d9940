/**
 * MCP between peers, in one run: an agent's `call_remote_tool` of an echo tool on node B, through node A's `/mcp`
 * (A keeps its MCP session with B's service, B's backend is a stateful MCP server in a child process); the same echo
 * called by the MCP SDK client straight to the backend; and a bare stream open + 1 KiB echo between A and B. All
 * three run interleaved, one by one, over established sessions and connections (A and B talk over one direct
 * connection, as after discovery). Both nodes share this process, so figures are a floor for two machines.
 * A also federates the service: the same echo called by its federated name (`bench__echo`) on A's `/mcp`, in the
 * same interleaved run, against `call_remote_tool`.
 */
import { performance } from "node:perf_hooks"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Exit, Scope } from "effect"
import { goals } from "./lib/goals.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import * as TwoNodes from "./lib/twoNodes.js"

const TEXT = "x".repeat(64)
const WARMUP = 200
const SAMPLES = 1000

const timed = async (work: () => Promise<boolean>): Promise<number> => {
  const started = performance.now()
  if (!(await work())) throw new Error("a round trip went wrong")
  return performance.now() - started
}

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const client = async (url: string, headers: Record<string, string> = {}) => {
  const mcp = new Client({ name: "bench", version: "1.0.0" })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
  return mcp
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const port = await freePort()
  const backendUrl = `http://127.0.0.1:${port}`
  const backend = await start("bench/servers/mcp.ts", [String(port)], `${backendUrl}/healthz`)
  const scope = Effect.runSync(Scope.make())
  try {
    const service = { name: "bench", type: "mcp" as const, description: "", target_url: `${backendUrl}/mcp`, env: {} }
    const mesh = await TwoNodes.make(scope, { b: [service], federateOnA: ["mcp://bench"] })
    const agent = await client(`${mesh.a.url}/mcp`, { "x-mesh-authentication": `Bearer ${mesh.a.apiToken}` })
    const straight = await client(`${backendUrl}/mcp`)

    const viaMesh = async () => {
      const result = (await agent.callTool({
        name: "call_remote_tool",
        arguments: { peer_id: mesh.bId, tool_name: "mcp://bench/echo", arguments: { text: TEXT } },
      })) as CallToolResult
      return result.isError !== true && textOf(result) === TEXT
    }
    const federated = async () => {
      const result = (await agent.callTool({ name: "bench__echo", arguments: { text: TEXT } })) as CallToolResult
      return result.isError !== true && textOf(result) === TEXT
    }
    // Federation lists the tool after its first round.
    const listedBy = Date.now() + 30_000
    while (!(await agent.listTools()).tools.some((t) => t.name === "bench__echo")) {
      if (Date.now() > listedBy) throw new Error("A did not federate bench/echo within 30 s")
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const direct = async () => {
      const result = (await straight.callTool({ name: "echo", arguments: { text: TEXT } })) as CallToolResult
      return textOf(result) === TEXT
    }
    for (let i = 0; i < WARMUP; i++) {
      await timed(viaMesh)
      await timed(federated)
      await timed(direct)
      await TwoNodes.echo(mesh)
    }
    const samples = {
      mesh: [] as Array<number>,
      federated: [] as Array<number>,
      direct: [] as Array<number>,
      stream: [] as Array<number>,
    }
    for (let i = 0; i < SAMPLES; i++) {
      samples.mesh.push(await timed(viaMesh))
      samples.federated.push(await timed(federated))
      samples.direct.push(await timed(direct))
      samples.stream.push(await TwoNodes.echo(mesh))
    }
    mesh.checkConnection()
    await agent.close()
    await straight.close()

    const p50 = {
      mesh: TwoNodes.percentile(samples.mesh, 0.5),
      federated: TwoNodes.percentile(samples.federated, 0.5),
      direct: TwoNodes.percentile(samples.direct, 0.5),
    }
    const federatedRatio = p50.federated / p50.mesh
    const stream50 = TwoNodes.percentile(samples.stream, 0.5)
    const overhead = p50.mesh - p50.direct
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
        notes: `${SAMPLES} of each, interleaved; call_remote_tool through A ${TwoNodes.ms(samples.mesh)}; SDK client straight to the backend ${TwoNodes.ms(samples.direct)}; bare stream ${TwoNodes.ms(samples.stream)}`,
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
        notes: `${SAMPLES} of each, interleaved in the run above; bench__echo on A's /mcp ${TwoNodes.ms(samples.federated)}`,
      },
    ]
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await backend.stop()
  }
}

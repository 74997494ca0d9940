/**
 * MCP between peers, in one run: an agent's `call_remote_tool` of an echo tool on node B, through node A's `/mcp`
 * (A keeps its MCP session with B's service, B's backend is a stateful MCP server in a child process); the same echo
 * called by the MCP SDK client straight to the backend; and a bare stream open + 1 KiB echo between A and B. All
 * three run interleaved, one by one, over established sessions and connections (A and B talk over one direct
 * connection, as after discovery). Both nodes share this process, so figures are a floor for two machines.
 */
import { performance } from "node:perf_hooks"
import type { Connection } from "@libp2p/interface"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Exit, Logger, LogLevel, Scope } from "effect"
import { MeshHost, type MeshHostService } from "../src/services/mesh/MeshHost.js"
import * as ControlPlaneHarness from "../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../src/testing/MeshClient.js"
import * as NodeHarness from "../src/testing/NodeHarness.js"
import * as RouterHarness from "../src/testing/RouterHarness.js"
import { goals } from "./lib/goals.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"

const ECHO = "/mesh/bench/echo/1.0.0"
const PAYLOAD = new Uint8Array(1024).map((_, i) => i % 251)
const TEXT = "x".repeat(64)
const WARMUP = 200
const SAMPLES = 1000

const POLICY = {
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["*"], allowed_targets: ["*"] }],
  bindings: [],
}

const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? Number.NaN
}

const quietly = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))

const timed = async (work: () => Promise<boolean>): Promise<number> => {
  const started = performance.now()
  if (!(await work())) throw new Error("a round trip went wrong")
  return performance.now() - started
}

/** One stream open + 1 KiB echo round trip over the existing connection. */
const echo = async (connection: Connection): Promise<boolean> => {
  const stream = await connection.newStream(ECHO, { runOnLimitedConnection: true })
  stream.send(PAYLOAD)
  await stream.close()
  let received = 0
  for await (const chunk of stream) received += chunk.byteLength
  return received === PAYLOAD.byteLength
}

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const memberHost = (node: NodeHarness.NodeHarness) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member" ? Effect.succeed(Context.get(phase.context, MeshHost)) : Effect.dieMessage("not a member"),
  )

const directConnection = (from: MeshHostService, to: string): Connection => {
  const found = from.libp2p.getConnections().find((c) => c.remotePeer.toString() === to && c.limits === undefined)
  if (found === undefined) throw new Error("no direct connection between the nodes")
  return found
}

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
    const mesh = await quietly(
      Effect.gen(function* () {
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
        const policy = yield* MeshClient.json(cp.url, "POST", "/policies", cp.adminToken, POLICY)
        if (policy.status !== 200) return yield* Effect.dieMessage(`policy refused: ${policy.status}`)
        yield* RouterHarness.make(cp)
        const service = {
          name: "bench",
          type: "mcp" as const,
          description: "",
          target_url: `${backendUrl}/mcp`,
          env: {},
        }
        const b = yield* NodeHarness.make(cp, {
          file: { labels: {}, egress: { require_labels: {} }, services: [service] },
        })
        const a = yield* NodeHarness.make(cp)
        yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
        const hostA = yield* memberHost(a)
        const hostB = yield* memberHost(b)
        const direct = (yield* hostB.addresses).find((x) => x.includes("/tcp/") && !x.includes("p2p-circuit"))
        if (direct === undefined) return yield* Effect.dieMessage("node B has no TCP address")
        yield* hostA.dial(direct)
        return { a, hostA, hostB, bId: hostB.peerId }
      }).pipe(Scope.extend(scope)),
    )
    await mesh.hostB.libp2p.handle(
      ECHO,
      async (stream) => {
        for await (const chunk of stream) stream.send(chunk)
        await stream.close()
      },
      { runOnLimitedConnection: true },
    )
    const connection = directConnection(mesh.hostA, mesh.bId)
    const agent = await client(`${mesh.a.url}/mcp`, { "x-mesh-authentication": `Bearer ${mesh.a.apiToken}` })
    const straight = await client(`${backendUrl}/mcp`)

    const viaMesh = async () => {
      const result = (await agent.callTool({
        name: "call_remote_tool",
        arguments: { peer_id: mesh.bId, tool_name: "mcp://bench/echo", arguments: { text: TEXT } },
      })) as CallToolResult
      return result.isError !== true && textOf(result) === TEXT
    }
    const direct = async () => {
      const result = (await straight.callTool({ name: "echo", arguments: { text: TEXT } })) as CallToolResult
      return textOf(result) === TEXT
    }
    for (let i = 0; i < WARMUP; i++) {
      await timed(viaMesh)
      await timed(direct)
      await timed(() => echo(connection))
    }
    const samples = { mesh: [] as Array<number>, direct: [] as Array<number>, stream: [] as Array<number> }
    for (let i = 0; i < SAMPLES; i++) {
      samples.mesh.push(await timed(viaMesh))
      samples.direct.push(await timed(direct))
      samples.stream.push(await timed(() => echo(connection)))
    }
    if (directConnection(mesh.hostA, mesh.bId) !== connection) throw new Error("the direct connection changed")
    await agent.close()
    await straight.close()

    const p50 = { mesh: percentile(samples.mesh, 0.5), direct: percentile(samples.direct, 0.5) }
    const stream50 = percentile(samples.stream, 0.5)
    const overhead = p50.mesh - p50.direct
    const ms = (xs: ReadonlyArray<number>) =>
      `p50 ${percentile(xs, 0.5).toFixed(3)} ms, p99 ${percentile(xs, 0.99).toFixed(3)} ms`
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
        notes: `${SAMPLES} of each, interleaved; call_remote_tool through A ${ms(samples.mesh)}; SDK client straight to the backend ${ms(samples.direct)}; bare stream ${ms(samples.stream)}`,
      },
    ]
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await backend.stop()
  }
}

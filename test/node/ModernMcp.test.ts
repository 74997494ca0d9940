/**
 * A modern-only MCP server (SDK v2, 2026-07-28, `legacy: 'reject'`) published by node B, used from a 2025-era agent
 * (the v1 SDK client) on node A's `/mcp`: a control plane, a router and two nodes in this process over loopback (real
 * libp2p, real HTTP). B's probe finds it modern and publishes it; A finds it, describes its tools, calls them (text,
 * progress, and a confirmation asked by `input_required` and answered on the retry) and federates it. The server
 * hears no `initialize` and no session: every request it gets is a modern one.
 */
import { fileURLToPath } from "node:url"
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type CallToolResult, CallToolResultSchema, type Progress } from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Layer } from "effect"
import type * as NodeFile from "../../src/domain/NodeFile.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { modernMcp } from "../support/modernMcp.js"
import { eventually, tokenHeader } from "./support.js"

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://modern", "mcp://modstdio"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

const http = (name: string, url: string): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: `${name}, modern only`,
  target_url: url,
  env: {},
})

/** The same tools over stdio, modern only: found by server/discover, served from a pool of processes. */
const STDIO: NodeFile.ServiceSpec = {
  name: "modstdio",
  type: "mcp",
  description: "modstdio, modern only, over stdio",
  command: [process.execPath, fileURLToPath(new URL("../support/modernStdioServer.mjs", import.meta.url)), "s"],
  env: {},
}

class Mesh extends Context.Tag("test/ModernMcpMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    /** A node that has listed nothing: its first exchange with the service is a call. */
    readonly c: NodeHarness.NodeHarness
    readonly bId: string
    readonly heard: () => ReadonlyArray<{ readonly method: string | undefined; readonly version: string | undefined }>
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const server = yield* modernMcp("b")
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [http("modern", `${server.url}/mcp`), STDIO],
      },
    })
    const a = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [],
        federate: ["mcp://modern", "mcp://modstdio"],
      },
    })
    const c = yield* NodeHarness.make(cp, { file: { labels: {}, egress: { require_labels: {} }, services: [] } })
    yield* Effect.all([a.connected, b.connected, c.connected], { concurrency: "unbounded" })
    return { a, c, bId: yield* b.peerId, heard: server.heard }
  }),
)

/** A 2025-era agent: the v1 SDK client, which knows nothing of 2026-07-28. */
const agent = (node: NodeHarness.NodeHarness) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "legacy-agent", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), { requestInit: { headers: tokenHeader(node) } }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

interface Row {
  readonly peer_id: string
  readonly tool_name?: string
  readonly error?: string
}

const rowsOf = (result: CallToolResult) => (result.structuredContent as { tools: ReadonlyArray<Row> }).tools

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("a modern-only MCP server", (it) => {
  it.scoped("is published, found, described and called from a 2025-era agent, with no initialize", () =>
    Effect.gen(function* () {
      const { a, bId, heard } = yield* Mesh
      const client = yield* agent(a)
      const found = yield* eventually(
        60,
        call(client, "find_remote_tools", { service_name: "modern" }),
        (r) => r.isError !== true && rowsOf(r).filter((row) => row.error === undefined).length === 3,
      )
      expect(
        rowsOf(found)
          .map((row) => [row.peer_id, row.tool_name])
          .sort(),
      ).toEqual([
        [bId, "mcp://modern/confirm"],
        [bId, "mcp://modern/count"],
        [bId, "mcp://modern/echo"],
      ])

      const described = yield* call(client, "describe_remote_tool", { peer_id: bId, tool_name: "mcp://modern/count" })
      expect(described.isError, textOf(described)).not.toBe(true)
      expect(described.structuredContent).toMatchObject({
        description: "Counts up to steps, reporting progress at each step",
        input_schema: { type: "object", properties: { steps: { type: "integer", minimum: 1, maximum: 10 } } },
      })

      const echoed = yield* call(client, "call_remote_tool", {
        peer_id: bId,
        tool_name: "mcp://modern/echo",
        arguments: { text: "hi" },
      })
      expect(echoed.isError, textOf(echoed)).not.toBe(true)
      expect(textOf(echoed)).toBe("b:hi")

      const progress: Array<Progress> = []
      const counted = yield* Effect.promise(() =>
        client.request(
          {
            method: "tools/call",
            params: {
              name: "call_remote_tool",
              arguments: { peer_id: bId, tool_name: "mcp://modern/count", arguments: { steps: 3 } },
            },
          },
          CallToolResultSchema,
          { onprogress: (p) => progress.push(p) },
        ),
      )
      expect(textOf(counted)).toBe("b:counted 3")
      expect(progress.map((p) => [p.progress, p.total, p.message])).toEqual([
        [1, 3, "step 1"],
        [2, 3, "step 2"],
        [3, 3, "step 3"],
      ])

      // The server asks for a confirmation first: the agent reads the request, answers it on the retry.
      const target = { peer_id: bId, tool_name: "mcp://modern/confirm", arguments: { action: "deploy" } }
      const asked = yield* call(client, "call_remote_tool", target)
      expect(asked.isError, textOf(asked)).not.toBe(true)
      const question = asked.structuredContent as {
        resultType: string
        inputRequests: Record<string, { method: string; params: { message: string } }>
        requestState: string
      }
      expect(question.resultType).toBe("input_required")
      expect(question.inputRequests.confirm?.method).toBe("elicitation/create")
      expect(question.inputRequests.confirm?.params.message).toBe("Really deploy?")
      const done = yield* call(client, "call_remote_tool", {
        ...target,
        input_responses: { confirm: { action: "accept", content: { confirm: true } } },
        request_state: question.requestState,
      })
      expect(done.isError, textOf(done)).not.toBe(true)
      expect(textOf(done)).toBe("b:did deploy")
      // A state this node did not give is refused before anything is sent.
      const forged = yield* call(client, "call_remote_tool", { ...target, request_state: "forged" })
      expect(forged.isError).toBe(true)

      // Every request the server heard was a modern one: no initialize, no session, the version on each.
      const methods = heard().map((h) => h.method)
      expect(methods).not.toContain("initialize")
      expect(heard().every((h) => h.method === undefined || h.version === "2026-07-28")).toBe(true)
      expect(methods).toContain("tools/call")
    }),
  )

  it.scoped("a first call from a node that never listed it is one modern request, and B opens no session", () =>
    Effect.gen(function* () {
      const { c, bId, heard } = yield* Mesh
      const client = yield* agent(c)
      const before = heard().length
      const call1 = call(client, "call_remote_tool", {
        peer_id: bId,
        tool_name: "mcp://modern/echo",
        arguments: { text: "c" },
      })
      const first = yield* eventually(20, call1, (r) => r.isError !== true)
      expect(textOf(first)).toBe("b:c")
      const second = yield* call(client, "call_remote_tool", {
        peer_id: bId,
        tool_name: "mcp://modern/echo",
        arguments: { text: "again" },
      })
      expect(textOf(second)).toBe("b:again")
      // The serving node asked its backend's era once (server/discover), and passed both calls on as they came.
      const since = heard()
        .slice(before)
        .map((h) => h.method)
      expect(since).not.toContain("initialize")
      expect(since.filter((m) => m === "tools/call")).toHaveLength(2)
    }),
  )

  it.scoped("over stdio too: found, called with progress and an input_required answered, federated", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      const client = yield* agent(a)
      const found = yield* eventually(
        60,
        call(client, "find_remote_tools", { service_name: "modstdio" }),
        (r) => r.isError !== true && rowsOf(r).filter((row) => row.error === undefined).length === 3,
      )
      expect(
        rowsOf(found)
          .map((row) => row.tool_name)
          .sort(),
      ).toEqual(["mcp://modstdio/confirm", "mcp://modstdio/count", "mcp://modstdio/echo"])
      const described = yield* call(client, "describe_remote_tool", { peer_id: bId, tool_name: "mcp://modstdio/echo" })
      expect(described.isError, textOf(described)).not.toBe(true)
      const progress: Array<Progress> = []
      const counted = yield* Effect.promise(() =>
        client.request(
          {
            method: "tools/call",
            params: {
              name: "call_remote_tool",
              arguments: { peer_id: bId, tool_name: "mcp://modstdio/count", arguments: { steps: 2 } },
            },
          },
          CallToolResultSchema,
          { onprogress: (p) => progress.push(p) },
        ),
      )
      expect(textOf(counted), textOf(counted)).toBe("s:counted 2")
      expect(progress.map((p) => p.progress)).toEqual([1, 2])
      const target = { peer_id: bId, tool_name: "mcp://modstdio/confirm", arguments: { action: "stop" } }
      const asked = yield* call(client, "call_remote_tool", target)
      const state = (asked.structuredContent as { requestState?: string }).requestState
      expect(state, textOf(asked)).toBeTypeOf("string")
      const done = yield* call(client, "call_remote_tool", {
        ...target,
        input_responses: { confirm: { action: "accept", content: { confirm: false } } },
        request_state: state,
      })
      expect(textOf(done)).toBe("s:did not stop")
      const listed = yield* eventually(
        60,
        Effect.map(
          Effect.promise(() => client.listTools()),
          (all) => all.tools.map((t) => t.name),
        ),
        (all) => all.includes("modstdio__echo"),
      )
      expect(listed).toContain("modstdio__count")
      const echoed = yield* call(client, "modstdio__echo", { text: "pooled" })
      expect(textOf(echoed)).toBe("s:pooled")
    }),
  )

  it.scoped("is federated: A lists modern__echo as its own and calls it in one tools/call", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const client = yield* agent(a)
      const names = Effect.map(
        Effect.promise(() => client.listTools()),
        (listed) => listed.tools.map((t) => t.name),
      )
      const listed = yield* eventually(60, names, (all) => all.includes("modern__echo"))
      expect(listed.filter((n) => n.startsWith("modern__")).sort()).toEqual([
        "modern__confirm",
        "modern__count",
        "modern__echo",
      ])
      const echoed = yield* call(client, "modern__echo", { text: "federated" })
      expect(echoed.isError, textOf(echoed)).not.toBe(true)
      expect(textOf(echoed)).toBe("b:federated")
    }),
  )
})

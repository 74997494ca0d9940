/**
 * Peers' tool listings honour the server's `ttlMs` (MCP 2026-07-28, caching; issue 50, item 7), end to end: a control
 * plane, a router and two nodes in this process over loopback (real libp2p, real HTTP, real time). B publishes a
 * modern-only MCP server whose `tools/list` results say `ttlMs: 8000`; A's agent asks `find_remote_tools` and
 * `describe_remote_tool` about it. The server counts the `tools/list` requests that come from A: one per ttl however
 * often A is asked, one more once it is stale, and one before it when A is asked about a tool its listing lacks.
 */
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Layer } from "effect"
import { z } from "zod"
import type * as NodeFile from "../../src/domain/NodeFile.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { modernMcp } from "../support/modernMcp.js"
import { eventually, tokenHeader } from "./support.js"

const TTL_MS = 8_000

const POLICY = {
  roles: [
    { name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["mcp://cached"], allowed_targets: ["*"] },
  ],
  bindings: [],
}

const http = (name: string, url: string): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: `${name}, modern only, listings fresh for ${TTL_MS} ms`,
  target_url: url,
  env: {},
})

class Mesh extends Context.Tag("test/ListingTtlMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly bId: string
    /** `tools/list` requests the server had from A. */
    readonly listsFromA: () => number
    /** The server lists `late` from now on. */
    readonly addLate: () => void
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    let late = false
    const server = yield* modernMcp("b", {
      ttlMs: TTL_MS,
      more: (made) => {
        if (!late) return
        const server = made as { registerTool: (name: string, config: object, run: () => unknown) => void }
        server.registerTool("late", { description: "Added later", inputSchema: z.object({}) }, async () => ({
          content: [{ type: "text", text: "late" }],
        }))
      },
    })
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [http("cached", `${server.url}/mcp`)] },
    })
    const a = yield* NodeHarness.make(cp, { file: { labels: {}, egress: { require_labels: {} }, services: [] } })
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    const aId = yield* a.peerId
    return {
      a,
      bId: yield* b.peerId,
      listsFromA: () => server.heard().filter((h) => h.method === "tools/list" && h.peer === aId).length,
      addLate: () => {
        late = true
      },
    }
  }),
)

const agent = (node: NodeHarness.NodeHarness) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "agent", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), { requestInit: { headers: tokenHeader(node) } }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)

const toolsOf = (result: CallToolResult) =>
  ((result.structuredContent as { tools?: ReadonlyArray<{ tool_name?: string }> } | undefined)?.tools ?? [])
    .map((row) => row.tool_name ?? "")
    .sort()

/** Long enough for the listing A holds to go stale. */
const stale = Effect.sleep(Duration.millis(TTL_MS + 500))

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("a listing with ttlMs", (it) => {
  it.scoped("is asked of the server once within its ttl and again after it; a tool it lacks asks again at once", () =>
    Effect.gen(function* () {
      const { a, bId, listsFromA, addLate } = yield* Mesh
      const client = yield* agent(a)
      const find = Effect.map(call(client, "find_remote_tools", { peer_id: bId, service_name: "cached" }), toolsOf)
      const describe = (tool: string) =>
        call(client, "describe_remote_tool", { peer_id: bId, tool_name: `mcp://cached/${tool}` })
      yield* eventually(60, find, (tools) => tools.includes("mcp://cached/echo"))
      yield* stale
      const before = listsFromA()
      expect(yield* find).toEqual(["mcp://cached/confirm", "mcp://cached/count", "mcp://cached/echo"])
      expect(listsFromA()).toBe(before + 1)
      // Within the ttl: served as held, however often and by whichever tool.
      expect(yield* find).toEqual(["mcp://cached/confirm", "mcp://cached/count", "mcp://cached/echo"])
      expect((yield* describe("echo")).isError).not.toBe(true)
      expect(listsFromA()).toBe(before + 1)
      // A tool the held listing lacks: the server is asked again before the ttl is out.
      addLate()
      const described = yield* describe("late")
      expect(described.isError, JSON.stringify(described.content)).not.toBe(true)
      expect(listsFromA()).toBe(before + 2)
      expect(yield* find).toContain("mcp://cached/late")
      expect(listsFromA()).toBe(before + 2)
      // Stale: asked again.
      yield* stale
      yield* find
      expect(listsFromA()).toBe(before + 3)
    }),
  )
})

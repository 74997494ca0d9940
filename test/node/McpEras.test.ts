/**
 * The node's `/mcp` in both protocol eras on one endpoint (issue 50, item 1), with stock clients: the 2.x SDK's client
 * pinned to 2026-07-28, negotiating (`'auto'`) and by default (2025 era), and the 1.x SDK's client. A control plane,
 * a router and three nodes in this process over loopback (real libp2p, real HTTP). B publishes `demo`; A federates
 * `mcp://late`, which nobody publishes until C starts. The same six tools, calls, progress and federated tools in
 * both eras; a modern agent hears of `late` on `subscriptions/listen`; requests whose headers disagree with their
 * body, or that name a version or a method the node does not serve, get the revision's errors.
 */

import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { expect, layer } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as V1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { createMcpHandler, Server } from "@modelcontextprotocol/server"
import { Context, Duration, Effect, Exit, Layer, Ref, Scope } from "effect"
import pkg from "../../package.json" with { type: "json" }
import type * as NodeFile from "../../src/domain/NodeFile.js"
import * as WebExchange from "../../src/layers/mcp/modern/WebExchange.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, mcpHeaders, tokenHeader } from "./support.js"

const SIX = [
  "get_mesh_info",
  "list_local_services",
  "discover_remote_services",
  "find_remote_tools",
  "describe_remote_tool",
  "call_remote_tool",
]

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://demo", "mcp://late", "mcp://asker"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

const MODERN = "2026-07-28"
const INSPECTOR = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "mcp-inspector")

/** The MCP Inspector's CLI run once against A's `/mcp` in `era`; the result it prints. */
const inspector = (node: NodeHarness.NodeHarness, era: "modern" | "legacy", args: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        INSPECTOR,
        "--cli",
        "--transport",
        "http",
        "--server-url",
        `${node.url}/mcp`,
        "--header",
        `X-Mesh-Authentication: Bearer ${node.apiToken}`,
        "--protocol-era",
        era,
        ...args,
      ],
      { timeout: 60_000 },
    )
    return JSON.parse(stdout) as Record<string, unknown>
  })

const http = (name: string, url: string): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: `${name} over HTTP`,
  target_url: url,
  env: {},
})

class Mesh extends Context.Tag("test/McpErasMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly bId: string
    /** Starts C, publishing `late`, until `scope` closes. */
    readonly startLate: (scope: Scope.Scope) => Effect.Effect<void, unknown>
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const demo = yield* Backends.demoMcp("b")
    const late = yield* Backends.demoMcp("late")
    const asking = yield* asker()
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [http("demo", `${demo.url}/mcp`), http("asker", `${asking.url}/mcp`)],
      },
    })
    const a = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [], federate: ["mcp://late"] },
    })
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    return {
      a,
      bId: yield* b.peerId,
      startLate: (scope) =>
        NodeHarness.make(cp, {
          file: { labels: {}, egress: { require_labels: {} }, services: [http("late", `${late.url}/mcp`)] },
        }).pipe(
          Effect.tap((c) => c.connected),
          Scope.extend(scope),
        ),
    }
  }),
)

/**
 * A modern-only MCP server on the 2.x SDK (`legacy: 'reject'`) whose `confirm` tool asks for a confirmation first:
 * `input_required` with an elicitation, then, on the retry, what the answer was.
 */
const asker = () => {
  const handler = createMcpHandler(
    () => {
      const server = new Server({ name: "asker", version: "1.0.0" }, { capabilities: { tools: {} } })
      server.setRequestHandler("tools/list", () => ({
        tools: [
          {
            name: "confirm",
            description: "Asks before it acts",
            inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"] },
          },
        ],
      }))
      server.setRequestHandler("tools/call", (request, ctx) => {
        const answer = ctx.mcpReq.inputResponses?.sure
        const item = String(request.params.arguments?.item)
        if (answer === undefined) {
          return {
            resultType: "input_required",
            inputRequests: {
              sure: {
                method: "elicitation/create",
                params: {
                  mode: "form",
                  message: `Delete ${item}?`,
                  requestedSchema: { type: "object", properties: { sure: { type: "boolean" } }, required: ["sure"] },
                },
              },
            },
            requestState: "asked-once",
          } as never
        }
        return { content: [{ type: "text", text: `confirmed ${item}: ${JSON.stringify(answer)}` }] }
      })
      return server
    },
    { legacy: "reject" },
  )
  return Backends.listen((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.once("end", () => {
      const exchange = WebExchange.toRequest(req, req.method === "POST" ? Buffer.concat(chunks) : undefined)
      void handler.fetch(exchange.request).then((response) => WebExchange.write(response, res))
    })
  })
}

type Mode = "pinned" | "auto" | "default"

/** A stock 2.x client on A's `/mcp` with the API token. */
const v2 = (node: NodeHarness.NodeHarness, mode: Mode) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client(
        { name: "test-agent", version: "1.0.0" },
        mode === "default" ? {} : { versionNegotiation: { mode: mode === "pinned" ? { pin: MODERN } : "auto" } },
      )
      const transport = new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), {
        requestInit: { headers: tokenHeader(node) },
      })
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close()),
  )

/** A stock 1.x client on A's `/mcp` with the API token. */
const v1 = (node: NodeHarness.NodeHarness) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new V1Client({ name: "test-agent", version: "1.0.0" })
      const transport = new V1Transport(new URL(`${node.url}/mcp`), { requestInit: { headers: tokenHeader(node) } })
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close()),
  )

interface Content {
  readonly type: string
  readonly text?: string
}
const textOf = (result: { readonly content?: unknown }) =>
  ((result.content ?? []) as ReadonlyArray<Content>).map((c) => (c.type === "text" ? c.text : "")).join("")

type Progressed = (progress: { progress: number }) => void

/** The two SDKs' clients as the checks below use them: a call with its progress callback. */
interface Agentish {
  listTools(): Promise<{ tools: ReadonlyArray<{ name: string }> }>
  call(name: string, args: Record<string, unknown>, onprogress?: Progressed): Promise<unknown>
}

const ofV2 = (client: Client): Agentish => ({
  listTools: () => client.listTools(),
  call: (name, args, onprogress) =>
    client.callTool({ name, arguments: args }, onprogress === undefined ? {} : { onprogress }),
})

const ofV1 = (client: V1Client): Agentish => ({
  listTools: () => client.listTools(),
  call: (name, args, onprogress) =>
    client.callTool({ name, arguments: args }, undefined, onprogress === undefined ? {} : { onprogress }),
})

/** What every era must do alike: the six tools in order, a remote call with its progress. */
const sameTools = (client: Agentish, bId: string) =>
  Effect.gen(function* () {
    const listed = yield* Effect.promise(() => client.listTools())
    expect(listed.tools.map((t) => t.name)).toEqual(SIX)
    const echoed = (yield* Effect.promise(() =>
      client.call("call_remote_tool", { peer_id: bId, tool_name: "mcp://demo/echo", arguments: { text: "hi" } }),
    )) as { content?: unknown; isError?: boolean }
    expect(echoed.isError ?? false, textOf(echoed)).toBe(false)
    expect(textOf(echoed)).toBe("b:hi")
    const progress: Array<number> = []
    const counted = (yield* Effect.promise(() =>
      client.call("call_remote_tool", { peer_id: bId, tool_name: "mcp://demo/count", arguments: { steps: 3 } }, (p) =>
        progress.push(p.progress),
      ),
    )) as { content?: unknown }
    expect(textOf(counted)).toBe("b:counted 3")
    expect(progress).toEqual([1, 2, 3])
  })

/** A hand-written 2026-07-28 request: its `_meta` envelope and the headers a client sends with it. */
const modernRequest = (
  node: NodeHarness.NodeHarness,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) =>
  Effect.promise(async () => {
    const params = (body.params ?? {}) as Record<string, unknown>
    const response = await fetch(`${node.url}/mcp`, {
      method: "POST",
      headers: {
        ...mcpHeaders(node),
        "mcp-protocol-version": MODERN,
        "mcp-method": String(body.method),
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        ...body,
        params: {
          ...params,
          _meta: {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
            ...((params._meta ?? {}) as Record<string, unknown>),
          },
        },
      }),
    })
    const text = await response.text()
    const data = text.startsWith("{")
      ? text
      : (text
          .split("\n")
          .find((line) => line.startsWith("data: "))
          ?.slice(6) ?? "{}")
    return { status: response.status, session: response.headers.get("mcp-session-id"), json: JSON.parse(data) }
  })

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("the node's /mcp in both eras", (it) => {
  it.effect("a client pinned to 2026-07-28 lists the six tools and calls call_remote_tool, with no session", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      yield* Effect.scoped(
        Effect.gen(function* () {
          const { client, transport } = yield* v2(a, "pinned")
          expect(client.getProtocolEra()).toBe("modern")
          expect(client.getNegotiatedProtocolVersion()).toBe(MODERN)
          expect(client.getServerVersion()?.name).toBe("mesh-node")
          expect(client.getInstructions()).toContain("call_remote_tool")
          yield* sameTools(ofV2(client), bId)
          expect(transport.sessionId).toBeUndefined()
        }),
      )
    }),
  )

  it.effect("'auto' settles on the modern era; the default 2.x client and the 1.x client keep 2025 sessions", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      yield* Effect.scoped(
        Effect.gen(function* () {
          const auto = yield* v2(a, "auto")
          expect(auto.client.getProtocolEra()).toBe("modern")
          expect(auto.transport.sessionId).toBeUndefined()
          yield* sameTools(ofV2(auto.client), bId)

          const legacy = yield* v2(a, "default")
          expect(legacy.client.getProtocolEra()).toBe("legacy")
          expect(legacy.client.getNegotiatedProtocolVersion()).toBe("2025-11-25")
          expect(legacy.transport.sessionId).toMatch(/^[0-9a-f-]{36}$/)
          yield* sameTools(ofV2(legacy.client), bId)

          const old = yield* v1(a)
          expect(old.transport.sessionId).toMatch(/^[0-9a-f-]{36}$/)
          expect(old.client.getServerVersion()?.name).toBe("mesh-node")
          yield* sameTools(ofV1(old.client), bId)
        }),
      )
    }),
  )

  it.effect("the MCP Inspector's CLI lists the tools and calls one in both eras", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      for (const era of ["modern", "legacy"] as const) {
        const listed = yield* inspector(a, era, ["--method", "tools/list"])
        expect(
          (listed.tools as ReadonlyArray<{ name: string }>).map((t) => t.name),
          era,
        ).toEqual(SIX)
        const called = yield* inspector(a, era, [
          "--method",
          "tools/call",
          "--tool-name",
          "call_remote_tool",
          "--tool-args-json",
          JSON.stringify({ peer_id: bId, tool_name: "mcp://demo/echo", arguments: { text: era } }),
        ])
        expect(textOf(called), era).toBe(`b:${era}`)
        // Only a 2026-07-28 answer names its server in every result's _meta: the era was the one asked for.
        expect(
          (called._meta as Record<string, unknown> | undefined)?.["io.modelcontextprotocol/serverInfo"],
          era,
        ).toEqual(era === "modern" ? { name: "mesh-node", version: pkg.version } : undefined)
      }
    }),
  )

  it.effect("server/discover and tools/list answer with resultType, and the list with its cache hints", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const discover = yield* modernRequest(a, { id: "d-1", method: "server/discover" })
      expect(discover.status).toBe(200)
      expect(discover.session).toBeNull()
      expect(discover.json.id).toBe("d-1")
      expect(discover.json.result.supportedVersions).toEqual([MODERN])
      expect(discover.json.result.capabilities.tools).toEqual({ listChanged: true })
      expect(discover.json.result.resultType).toBe("complete")
      const list = yield* modernRequest(a, { id: 7, method: "tools/list" })
      expect(list.json.id).toBe(7)
      expect(list.json.result.resultType).toBe("complete")
      expect(list.json.result.ttlMs).toBe(10_000)
      expect(list.json.result.cacheScope).toBe("private")
      expect(list.json.result.tools.map((t: { name: string }) => t.name)).toEqual(SIX)
    }),
  )

  it.effect("headers that disagree with the body are refused with -32020, echoing the id", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const method = yield* modernRequest(a, { id: 11, method: "tools/list" }, { "mcp-method": "tools/call" })
      expect(method.status).toBe(400)
      expect(method.json).toMatchObject({ id: 11, error: { code: -32020 } })
      const name = yield* modernRequest(
        a,
        { id: 12, method: "tools/call", params: { name: "get_mesh_info", arguments: {} } },
        { "mcp-name": "call_remote_tool" },
      )
      expect(name.status).toBe(400)
      expect(name.json).toMatchObject({ id: 12, error: { code: -32020 } })
      const version = yield* modernRequest(
        a,
        { id: 13, method: "tools/list" },
        { "mcp-protocol-version": "2099-01-01" },
      )
      expect(version.status).toBe(400)
      expect(version.json).toMatchObject({ id: 13, error: { code: -32020 } })
      // With matching headers the same call passes.
      const ok = yield* modernRequest(
        a,
        { id: 14, method: "tools/call", params: { name: "get_mesh_info", arguments: {} } },
        { "mcp-name": "get_mesh_info" },
      )
      expect(ok.json.result.isError ?? false).toBe(false)
    }),
  )

  it.effect("an unknown version gets -32022 with the supported list; a removed method 404 with -32601", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const unsupported = yield* modernRequest(
        a,
        {
          id: 21,
          method: "tools/list",
          params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } },
        },
        { "mcp-protocol-version": "2099-01-01" },
      )
      expect(unsupported.json).toMatchObject({ id: 21, error: { code: -32022 } })
      expect(JSON.stringify(unsupported.json.error.data)).toContain(MODERN)
      const removed = yield* modernRequest(a, { id: 22, method: "ping" })
      expect(removed.status).toBe(404)
      expect(removed.json).toMatchObject({ id: 22, error: { code: -32601 } })
      const malformed = yield* modernRequest(a, {
        id: 23,
        method: "tools/list",
        params: { _meta: { "io.modelcontextprotocol/clientInfo": "not an object" } },
      })
      expect(malformed.json).toMatchObject({ id: 23, error: { code: -32602 } })
    }),
  )

  it.effect("a modern agent hears toolsListChanged on subscriptions/listen when a federated service appears", () =>
    Effect.gen(function* () {
      const { a, startLate } = yield* Mesh
      yield* Effect.scoped(
        Effect.gen(function* () {
          const { client } = yield* v2(a, "pinned")
          const changed = yield* Ref.make(0)
          client.setNotificationHandler("notifications/tools/list_changed", () =>
            Effect.runSync(Ref.update(changed, (n) => n + 1)),
          )
          const subscription = yield* Effect.acquireRelease(
            Effect.promise(() => client.listen({ toolsListChanged: true })),
            (s) => Effect.promise(() => s.close()),
          )
          expect(subscription).toBeDefined()
          expect((yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)).toEqual(SIX)
          const scope = yield* Scope.make()
          yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
          yield* startLate(scope)
          yield* eventually(30, Ref.get(changed), (n) => n > 0)
          const listed = yield* Effect.promise(() => client.listTools({}, { cacheMode: "refresh" }))
          expect(listed.tools.map((t) => t.name)).toEqual([...SIX, "late__count", "late__echo"])
          const echoed = yield* Effect.promise(() => client.callTool({ name: "late__echo", arguments: { text: "x" } }))
          expect(textOf(echoed)).toBe("late:x")
        }),
      )
    }),
  )

  it.effect(
    "a modern-only tool's elicitation reaches a modern agent as input_required, a 2025 agent in its session",
    () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const ANSWER = { action: "accept" as const, content: { sure: true } }
        const call = {
          name: "call_remote_tool",
          arguments: { peer_id: bId, tool_name: "mcp://asker/confirm", arguments: { item: "x" } },
        }
        const expected = `confirmed x: ${JSON.stringify(ANSWER)}`
        yield* Effect.scoped(
          Effect.gen(function* () {
            const modern = yield* Effect.acquireRelease(
              Effect.promise(async () => {
                const client = new Client(
                  { name: "test-agent", version: "1.0.0" },
                  { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: MODERN } } },
                )
                client.setRequestHandler("elicitation/create", () => ANSWER)
                await client.connect(
                  new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
                    requestInit: { headers: tokenHeader(a) },
                  }),
                )
                return client
              }),
              (client) => Effect.promise(() => client.close()),
            )
            expect(textOf(yield* Effect.promise(() => modern.callTool(call)))).toBe(expected)

            const old = yield* Effect.acquireRelease(
              Effect.promise(async () => {
                const client = new V1Client(
                  { name: "test-agent", version: "1.0.0" },
                  { capabilities: { elicitation: {} } },
                )
                client.setRequestHandler(ElicitRequestSchema, () => ANSWER)
                await client.connect(
                  new V1Transport(new URL(`${a.url}/mcp`), { requestInit: { headers: tokenHeader(a) } }),
                )
                return client
              }),
              (client) => Effect.promise(() => client.close()),
            )
            const elicited = (yield* Effect.promise(() => old.callTool(call))) as { readonly content?: unknown }
            expect(textOf(elicited)).toBe(expected)
          }),
        )
      }),
  )
})

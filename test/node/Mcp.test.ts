/**
 * The node's MCP server for agents, end to end with stock MCP SDK clients: a control plane, a router and two nodes in
 * this process over loopback (real libp2p, real HTTP, real time). B publishes a stateful MCP server (`tools`), one
 * the policy does not open (`hidden`), and two stdio servers it runs itself: the test server (`stdio`) and the MCP
 * reference server (`everything`). A's agent finds and calls them through A's `/mcp`.
 */
import { join } from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import pkg from "../../package.json" with { type: "json" }
import type * as NodeFile from "../../src/domain/NodeFile.js"
import { PROTOCOL } from "../../src/p2p/CatalogProtocol.js"
import { PeerMcp } from "../../src/services/mcp/PeerMcp.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { socketFetch } from "../../src/testing/SocketFetch.js"
import * as Forwarder from "../scale/Forwarder.js"
import { setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, mcpHeaders, tokenHeader } from "./support.js"

const root = join(import.meta.dirname, "..", "..")
const SIX = [
  "call_remote_tool",
  "describe_remote_tool",
  "discover_remote_services",
  "find_remote_tools",
  "get_mesh_info",
  "list_local_services",
]

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://tools", "mcp://stdio", "mcp://everything"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

const http = (name: string, url: string): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: `${name} over HTTP`,
  target_url: url,
  env: {},
})

const command = (name: string, argv: ReadonlyArray<string>): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: `${name} over stdio`,
  command: [argv[0] ?? "", ...argv.slice(1)],
  env: {},
})

class Mesh extends Context.Tag("test/McpMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly b: NodeHarness.NodeHarness
    readonly aId: string
    readonly bId: string
    readonly backend: Backends.StatefulMcp
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const backend = yield* Backends.statefulMcp()
    const hidden = yield* Backends.statefulMcp()
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: { zone: "eu" },
        egress: { require_labels: {} },
        services: [
          http("tools", `${backend.url}/mcp`),
          http("hidden", `${hidden.url}/mcp`),
          command("stdio", [process.execPath, join(root, "test", "support", "stdioServer.mjs")]),
          command("everything", [
            process.execPath,
            join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
          ]),
        ],
      },
    })
    const a = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    return { a, b, aId: yield* a.peerId, bId: yield* b.peerId, backend }
  }),
)

/** A stock MCP client on the node's `/mcp`, over TCP with the API token or over the Unix socket. */
const agent = (node: NodeHarness.NodeHarness, via: "tcp" | "socket" = "tcp") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "test-agent", version: "1.0.0" })
      const transport =
        via === "tcp"
          ? new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), {
              requestInit: { headers: tokenHeader(node) },
            })
          : new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), { fetch: socketFetch(node.socketPath) })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

interface ToolRow {
  readonly peer_id: string
  readonly tool_name?: string
  readonly description?: string
  readonly labels?: Record<string, string>
  readonly error?: string
  readonly score?: number
}

const rowsOf = (result: CallToolResult) => (result.structuredContent as { tools: ReadonlyArray<ToolRow> }).tools

const memberService = <I, S>(node: NodeHarness.NodeHarness, tag: Context.Tag<I, S>) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member"
      ? Effect.succeed(Context.get(phase.context as Context.Context<I>, tag))
      : Effect.dieMessage("the node is not a member"),
  )

/** An initialize written by hand, to see which protocol version the server answers with. */
const negotiate = (node: NodeHarness.NodeHarness, version: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${node.url}/mcp`, {
      method: "POST",
      headers: mcpHeaders(node),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      }),
    })
    const text = await response.text()
    const data = text
      .split("\n")
      .find((line) => line.startsWith("data: "))
      ?.slice(6)
    return (JSON.parse(data ?? "{}") as { result?: { protocolVersion?: string } }).result?.protocolVersion
  })

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("the node's MCP server", (it) => {
  it.effect(
    "a stock client over TCP and over the socket lists the six tools with their schemas and the instructions",
    () =>
      Effect.gen(function* () {
        const { a } = yield* Mesh
        for (const via of ["tcp", "socket"] as const) {
          const client = yield* Effect.scoped(
            Effect.gen(function* () {
              const client = yield* agent(a, via)
              const tools = (yield* Effect.promise(() => client.listTools())).tools
              return { client, tools, instructions: client.getInstructions(), server: client.getServerVersion() }
            }),
          )
          expect(client.tools.map((t) => t.name).sort(), via).toEqual(SIX)
          for (const tool of client.tools) {
            expect(tool.inputSchema.type, `${via} ${tool.name}`).toBe("object")
            expect(tool.outputSchema?.type, `${via} ${tool.name}`).toBe("object")
            expect(tool.description?.length ?? 0, tool.name).toBeGreaterThan(40)
          }
          const call = client.tools.find((t) => t.name === "call_remote_tool")
          expect(call?.inputSchema.required).toEqual(["peer_id", "tool_name"])
          expect(Object.keys(call?.inputSchema.properties ?? {}).sort()).toEqual([
            "arguments",
            "input_responses",
            "peer_id",
            "request_state",
            "required_labels",
            "tool_name",
          ])
          expect(client.server).toEqual({ name: "mesh-node", version: pkg.version })
          for (const needle of [
            "discover_remote_services",
            "find_remote_tools",
            "describe_remote_tool",
            "call_remote_tool",
            "mcp://<service>/<tool>",
            "local_proxy_url",
            "X-Mesh-Authentication",
            "Never print",
          ]) {
            expect(client.instructions, needle).toContain(needle)
          }
        }
      }),
  )

  it.effect("protocol 2025-06-18 and newer are answered as asked; an unknown one gets the newest", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      expect(yield* negotiate(a, "2025-06-18")).toBe("2025-06-18")
      expect(yield* negotiate(a, "2025-11-25")).toBe("2025-11-25")
      expect(yield* negotiate(a, "2099-01-01")).toBe("2025-11-25")
    }),
  )

  it.effect("list_local_services shows what the node publishes, stdio servers included, by type", () =>
    Effect.gen(function* () {
      const { b } = yield* Mesh
      const client = yield* agent(b, "socket")
      const listed = yield* eventually(
        60,
        call(client, "list_local_services", { type: "mcp" }),
        (r) => (r.structuredContent as { services: Array<unknown> }).services.length === 4,
      )
      const services = (listed.structuredContent as { services: Array<{ name: string; tools?: Array<string> }> })
        .services
      expect(services.map((s) => s.name)).toEqual(["tools", "hidden", "stdio", "everything"])
      expect(services.find((s) => s.name === "stdio")?.tools).toEqual(["crash", "echo", "env", "pid"])
      expect(services.find((s) => s.name === "everything")?.tools).toContain("echo")
      expect(JSON.parse(textOf(listed))).toEqual(listed.structuredContent)
      const none = yield* call(client, "list_local_services", { type: "inference" })
      expect(none.structuredContent).toEqual({ services: [] })
    }).pipe(Effect.scoped),
  )

  it.effect("discover_remote_services finds B's MCP services, with B's labels and A's proxy URLs", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      const client = yield* agent(a)
      const found = yield* eventually(
        60,
        call(client, "discover_remote_services", { type: "mcp" }),
        (r) => (r.structuredContent as { services: Array<unknown> }).services.length === 4,
      )
      const rows = (found.structuredContent as { services: Array<Record<string, unknown>> }).services
      expect(rows.map((r) => r.srv_name)).toEqual(["everything", "hidden", "stdio", "tools"])
      expect(rows.find((r) => r.srv_name === "tools")).toEqual({
        peer_id: bId,
        srv_name: "tools",
        srv_description: "tools over HTTP",
        labels: { zone: "eu" },
        local_proxy_url: `${a.url}/mesh/${bId}/mcp/tools`,
      })
      const paged = yield* call(client, "discover_remote_services", { type: "mcp", limit: 1, offset: 1 })
      expect((paged.structuredContent as { services: Array<{ srv_name: string }> }).services).toEqual([
        expect.objectContaining({ srv_name: "hidden" }),
      ])
      // By name: the type+name key, which B provides as the service is published (stdio servers come last).
      const named = yield* eventually(
        30,
        call(client, "discover_remote_services", { type: "mcp", name: "stdio" }),
        (r) => (r.structuredContent as { services: Array<unknown> }).services.length > 0,
      )
      expect((named.structuredContent as { services: Array<{ srv_name: string }> }).services).toEqual([
        expect.objectContaining({ peer_id: bId, srv_name: "stdio" }),
      ])
    }).pipe(Effect.scoped),
  )

  it.effect(
    "find_remote_tools by tool name returns the tool wherever it can be called; a peer's search shows why not",
    () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const client = yield* agent(a)
        const byName = yield* eventually(
          60,
          call(client, "find_remote_tools", { tool_name: "echo" }),
          (r) => rowsOf(r).length === 3,
        )
        // `hidden` announces an echo too, but the policy keeps A from it: its row would be an error, left out here.
        // Each definition is the first this node saw of it: unpinned, with its fingerprint.
        const pinned = { pin: "unpinned", fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) }
        expect(rowsOf(byName)).toEqual([
          {
            peer_id: bId,
            tool_name: "mcp://everything/echo",
            description: expect.any(String),
            labels: { zone: "eu" },
            ...pinned,
          },
          {
            peer_id: bId,
            tool_name: "mcp://stdio/echo",
            description: "Echoes its text",
            labels: { zone: "eu" },
            ...pinned,
          },
          {
            peer_id: bId,
            tool_name: "mcp://tools/echo",
            description: "Echoes its text, and says how long it is",
            labels: { zone: "eu" },
            ...pinned,
          },
        ])

        // An intent ranks what the search listed: the best first, with a score; the refused service still a row.
        const ranked = rowsOf(
          yield* call(client, "find_remote_tools", { peer_id: bId, intent: "say how long my text is", limit: 2 }),
        )
        expect(ranked[0]).toMatchObject({ tool_name: "mcp://tools/echo", score: expect.any(Number) })
        expect(ranked.filter((r) => r.error === undefined)).toHaveLength(2)
        expect(ranked.find((r) => r.tool_name === "mcp://hidden")?.error).toContain("allowed_services")

        const onPeer = rowsOf(yield* call(client, "find_remote_tools", { peer_id: bId }))
        expect(onPeer.filter((r) => r.tool_name?.startsWith("mcp://tools/")).map((r) => r.tool_name)).toEqual([
          "mcp://tools/echo",
          "mcp://tools/fail",
        ])
        expect(onPeer.filter((r) => r.tool_name?.startsWith("mcp://stdio/")).length).toBe(4)
        const refused = onPeer.find((r) => r.tool_name === "mcp://hidden")
        expect(refused?.error).toContain("allowed_services")

        const oneService = rowsOf(
          yield* call(client, "find_remote_tools", { peer_id: bId, service_name: "mcp://tools" }),
        )
        expect(oneService.map((r) => r.tool_name)).toEqual(["mcp://tools/echo", "mcp://tools/fail"])
        const namespaced = rowsOf(yield* call(client, "find_remote_tools", { tool_name: "mcp://stdio/echo" }))
        expect(namespaced.map((r) => r.tool_name)).toEqual(["mcp://stdio/echo"])
        const nothing = yield* call(client, "find_remote_tools", { peer_id: bId, service_name: "absent" })
        expect(rowsOf(nothing)).toEqual([
          { peer_id: bId, tool_name: "mcp://absent", error: "the peer publishes no mcp service named absent" },
        ])

        const self = yield* call(client, "find_remote_tools", { peer_id: yield* a.peerId })
        expect(self.isError).toBe(true)
        expect(textOf(self)).toContain("this node's own peer id")
        const scheme = yield* call(client, "find_remote_tools", { service_name: "a2a://agent" })
        expect(scheme.isError).toBe(true)
      }).pipe(Effect.scoped),
  )

  it.effect("describe_remote_tool returns the tool's description and schemas", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      const client = yield* agent(a)
      const described = yield* call(client, "describe_remote_tool", { peer_id: bId, tool_name: "mcp://tools/echo" })
      expect(described.isError).toBeUndefined()
      expect(described.structuredContent).toMatchObject({
        peer_id: bId,
        tool_name: "mcp://tools/echo",
        description: "Echoes its text, and says how long it is",
        input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        output_schema: { type: "object", properties: { text: { type: "string" }, length: { type: "number" } } },
      })
      const missing = yield* call(client, "describe_remote_tool", { peer_id: bId, tool_name: "mcp://tools/nope" })
      expect(missing.isError).toBe(true)
      expect(textOf(missing)).toContain("lists no tool named nope")
      const bare = yield* call(client, "describe_remote_tool", { peer_id: bId, tool_name: "echo" })
      expect(bare.isError).toBe(true)
      expect(textOf(bare)).toContain("mcp://<service>/<tool>")
    }).pipe(Effect.scoped),
  )

  it.effect("call_remote_tool returns the remote result unchanged, over one backend session for all calls", () =>
    Effect.gen(function* () {
      const { a, bId, backend } = yield* Mesh
      const aId = yield* a.peerId
      const client = yield* agent(a)
      const direct = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const direct = new Client({ name: "direct", version: "1.0.0" })
          await direct.connect(new StreamableHTTPClientTransport(new URL(`${backend.url}/mcp`)))
          return direct
        }),
        (direct) => Effect.promise(() => direct.close()),
      )
      const expected = (yield* Effect.promise(() =>
        direct.callTool({ name: "echo", arguments: { text: "through the mesh" } }),
      )) as CallToolResult
      const peerMcp = yield* memberService(a, PeerMcp)
      const first = yield* call(client, "call_remote_tool", {
        peer_id: bId,
        tool_name: "mcp://tools/echo",
        arguments: { text: "through the mesh" },
      })
      const held = yield* peerMcp.sessions
      const results = yield* Effect.forEach([2, 3], () =>
        call(client, "call_remote_tool", {
          peer_id: bId,
          tool_name: "mcp://tools/echo",
          arguments: { text: "through the mesh" },
        }),
      )
      // The content is carried once: the structured content holds the rest of the remote result.
      const { content: _content, ...rest } = expected
      for (const result of [first, ...results]) {
        expect(result.content).toEqual(expected.content)
        expect(result.isError).toBeUndefined()
        expect(result.structuredContent).toEqual(rest)
      }
      const failed = yield* call(client, "call_remote_tool", { peer_id: bId, tool_name: "mcp://tools/fail" })
      expect(failed.isError).toBe(true)
      expect(failed.content).toEqual([{ type: "text", text: "it failed on purpose" }])
      // Every call from A, and its searches before, went over one session with the backend.
      expect(backend.sessionsBy(aId)).toBe(1)
      // A's side too: the calls after the first opened no session of their own.
      expect(yield* peerMcp.sessions).toBe(held)
      // B opened A's sessions at A's first requests (domain/McpOpen): none of them reached the backend without one.
      expect(backend.unsessioned()).toBe(0)
    }).pipe(Effect.scoped),
  )

  it.effect("refusals are tool errors that say why: labels B does not attest, B's policy", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      const client = yield* agent(a)
      const echo = { peer_id: bId, tool_name: "mcp://tools/echo", arguments: { text: "x" } }
      const labels = yield* call(client, "call_remote_tool", { ...echo, required_labels: "zone=us" })
      expect(labels.isError).toBe(true)
      expect(textOf(labels)).toContain("attests none of the required labels (zone=us)")
      const oneOf = yield* call(client, "call_remote_tool", { ...echo, required_labels: "zone=us,zone2=x" })
      expect(oneOf.isError).toBe(true)
      const attested = yield* call(client, "call_remote_tool", { ...echo, required_labels: "tier=gold,zone=eu" })
      expect(attested.isError).toBeUndefined()
      const syntax = yield* call(client, "call_remote_tool", { ...echo, required_labels: "zone" })
      expect(syntax.isError).toBe(true)
      expect(textOf(syntax)).toContain("key=value")

      const denied = yield* call(client, "call_remote_tool", { ...echo, tool_name: "mcp://hidden/echo" })
      expect(denied.isError).toBe(true)
      expect(textOf(denied)).toContain("denied by policy rule allowed_services")
      const self = yield* call(client, "call_remote_tool", { ...echo, peer_id: yield* a.peerId })
      expect(self.isError).toBe(true)
      const absent = yield* call(client, "call_remote_tool", { ...echo, tool_name: "mcp://absent/echo" })
      expect(absent.isError).toBe(true)
      // The policy is asked first: a caller learns nothing of services it may not call.
      expect(textOf(absent)).toContain("refused: denied by policy rule allowed_services")
    }).pipe(Effect.scoped),
  )

  it.effect("stdio MCP servers on B are called from A with call_remote_tool and through the proxy path", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      const client = yield* agent(a)
      const everything = yield* call(client, "call_remote_tool", {
        peer_id: bId,
        tool_name: "mcp://everything/echo",
        arguments: { message: "hello from A" },
      })
      expect(everything.content).toEqual([{ type: "text", text: "Echo: hello from A" }])
      const own = yield* call(client, "call_remote_tool", {
        peer_id: bId,
        tool_name: "mcp://stdio/echo",
        arguments: { text: "stdio" },
      })
      expect(own.content).toEqual([{ type: "text", text: "stdio" }])
      expect((own.structuredContent as { structuredContent: { text: string } }).structuredContent.text).toBe("stdio")

      // The same server, a session of its own, with a stock client on the proxy path.
      const proxied = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const proxied = new Client({ name: "proxied", version: "1.0.0" })
          await proxied.connect(
            new StreamableHTTPClientTransport(new URL(`${a.url}/mesh/${bId}/mcp/everything`), {
              requestInit: { headers: tokenHeader(a) },
            }),
          )
          return proxied
        }),
        (proxied) => Effect.promise(() => proxied.close()),
      )
      expect(proxied.getServerVersion()?.name).toBe("mcp-servers/everything")
      const tools = yield* Effect.promise(() => proxied.listTools())
      expect(tools.tools.map((t) => t.name)).toContain("echo")
      const echoed = yield* Effect.promise(() => proxied.callTool({ name: "echo", arguments: { message: "proxied" } }))
      expect(echoed.content).toEqual([{ type: "text", text: "Echo: proxied" }])
    }).pipe(Effect.scoped),
  )
})

class Flaky extends Context.Tag("test/McpFlaky")<
  Flaky,
  {
    readonly a: NodeHarness.NodeHarness
    readonly b: NodeHarness.NodeHarness
    readonly bId: string
    /** B's MCP backend, at an address the test holds (`forwarder`), until `stop`. */
    readonly forwarder: Forwarder.Forwarder
    /** Stops the backend: from then on every connection to its address is cut, and counted here. */
    readonly stop: Effect.Effect<void>
    readonly refused: () => number
  }
>() {}

describe("when things go wrong on B", () => {
  layer(
    Layer.scoped(
      Flaky,
      Effect.gen(function* () {
        const backendScope = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
        const first = yield* Backends.statefulMcp().pipe(Scope.extend(backendScope))
        const forwarder = yield* Forwarder.make(first.port)
        const down = yield* Backends.down
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
        yield* setPolicy(cp, POLICY)
        yield* RouterHarness.make(cp)
        const b = yield* NodeHarness.make(cp, {
          file: {
            labels: {},
            egress: { require_labels: {} },
            services: [http("tools", `${forwarder.url}/mcp`)],
          },
        })
        const a = yield* NodeHarness.make(cp)
        yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
        const stop = Effect.zipRight(Scope.close(backendScope, Exit.void), forwarder.target(down.port))
        return { a, b, bId: yield* b.peerId, forwarder, stop, refused: down.cut }
      }),
    ),
    { excludeTestServices: true, timeout: Duration.minutes(2) },
  )((it) => {
    it.effect("the gossip path answers: B's tool is found although B's catalog never answers", () =>
      Effect.gen(function* () {
        const { a, b, bId } = yield* Flaky
        // B's catalog protocol now takes questions and never answers them.
        const hostB = yield* memberService(b, MeshHost)
        yield* eventually(
          60,
          Effect.sync(() => hostB.libp2p.getProtocols().includes(PROTOCOL)),
          (up) => up,
        )
        yield* Effect.promise(() => hostB.libp2p.unhandle(PROTOCOL))
        yield* Effect.promise(() => hostB.libp2p.handle(PROTOCOL, () => undefined, { runOnLimitedConnection: true }))
        const client = yield* agent(a)
        // B publishes once its backend answered its probe; the first search for the name may come before that.
        const found = yield* eventually(
          60,
          call(client, "find_remote_tools", { tool_name: "echo" }),
          (r) => rowsOf(r).length > 0,
        )
        expect(rowsOf(found)).toEqual([
          expect.objectContaining({ peer_id: bId, tool_name: "mcp://tools/echo", labels: {} }),
        ])
        // The catalog really is of no help: asked directly, it times out.
        const onPeer = rowsOf(yield* call(client, "find_remote_tools", { peer_id: bId }))
        expect(onPeer).toEqual([{ peer_id: bId, error: expect.stringContaining("failed to fetch the peer's catalog") }])
      }).pipe(Effect.scoped),
    )

    it.effect(
      "a backend that cuts the call: call_remote_tool does not repeat it (it may have run); the next call opens a new session",
      () =>
        Effect.gen(function* () {
          const { a, bId, forwarder, stop, refused } = yield* Flaky
          const aId = yield* a.peerId
          const client = yield* agent(a)
          const echo = { peer_id: bId, tool_name: "mcp://tools/echo", arguments: { text: "again" } }
          expect((yield* call(client, "call_remote_tool", echo)).isError).toBeUndefined()
          yield* stop
          const cutBefore = refused()
          // A connection the backend's address accepts and cuts: B cannot tell whether the call was read, so A gets
          // an error that says so, after exactly one try.
          const cut = yield* call(client, "call_remote_tool", echo)
          expect(cut.isError).toBe(true)
          expect(textOf(cut)).toMatch(/may have run; it was not repeated/)
          expect(refused() - cutBefore).toBe(1)
          // Back at the same address (held by the forwarder) without the session A had: the backend does not know
          // A's session (404), and A opens a new one.
          const revived = yield* Backends.statefulMcp()
          yield* forwarder.target(revived.port)
          const answer = yield* call(client, "call_remote_tool", echo)
          expect(answer.isError, textOf(answer)).toBeUndefined()
          expect(answer.content).toEqual([{ type: "text", text: "again" }])
          expect(revived.sessionsBy(aId)).toBe(1)
        }).pipe(Effect.scoped),
    )
  })
})

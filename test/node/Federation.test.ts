/**
 * Federation end to end with the stock MCP SDK client: a control plane, a router and three nodes in this process
 * over loopback (real libp2p, real HTTP, real time). B and C both publish `demo` (an MCP server that says who
 * answered and reports progress); B also publishes `hidden`, which the policy does not open to A. A federates both
 * (`federate:` in its file). A's agent sees `demo`'s tools as A's own and calls them in one `tools/call`; when B is
 * stopped C takes the calls; when C stops too, the tools leave A's list and the agent hears `list_changed`.
 */
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  type CallToolResult,
  CallToolResultSchema,
  type Progress,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Exit, Layer, Ref, Scope } from "effect"
import type * as NodeFile from "../../src/domain/NodeFile.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, socket, tcp, tokenHeader } from "./support.js"

const POLICY = {
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["mcp://demo"], allowed_targets: ["*"] }],
  bindings: [],
}

/** The gossip announcement interval: a change must reach the agent within it. */
const ANNOUNCE_INTERVAL_S = 10

const http = (name: string, url: string): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: `${name} over HTTP`,
  target_url: url,
  env: {},
})

class Mesh extends Context.Tag("test/FederationMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly bId: string
    readonly cId: string
    /** Stops a node for good, as if its process ended. */
    readonly stop: (which: "b" | "c") => Effect.Effect<void>
    /** Starts another node with this file (in this data folder: the same peer again) until `scope` closes. */
    readonly start: (
      file: NodeFile.NodeFile,
      scope: Scope.Scope,
      dataDir?: string,
    ) => Effect.Effect<NodeHarness.NodeHarness, unknown>
    /** A demo backend that answers as `d`. */
    readonly onD: Backends.Backend
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const onB = yield* Backends.demoMcp("b")
    const onC = yield* Backends.demoMcp("c")
    const hidden = yield* Backends.demoMcp("hidden")
    const onD = yield* Backends.demoMcp("d")
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const scopes = { b: yield* Scope.make(), c: yield* Scope.make() }
    yield* Effect.addFinalizer(() =>
      Effect.all([Scope.close(scopes.b, Exit.void), Scope.close(scopes.c, Exit.void)], { discard: true }),
    )
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [http("demo", `${onB.url}/mcp`), http("hidden", `${hidden.url}/mcp`)],
      },
    }).pipe(Scope.extend(scopes.b))
    const c = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [http("demo", `${onC.url}/mcp`)] },
    }).pipe(Scope.extend(scopes.c))
    const a = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [], federate: ["mcp://demo", "mcp://hidden"] },
    })
    yield* Effect.all([a.connected, b.connected, c.connected], { concurrency: "unbounded" })
    return {
      a,
      bId: yield* b.peerId,
      cId: yield* c.peerId,
      stop: (which) => Scope.close(scopes[which], Exit.void),
      start: (file, scope, dataDir) =>
        NodeHarness.make(cp, { file, ...(dataDir === undefined ? {} : { overrides: { dataDir } }) }).pipe(
          Effect.tap((node) => node.connected),
          Scope.extend(scope),
        ),
      onD,
    }
  }),
)

/** A stock MCP client on A's `/mcp` that counts the `list_changed` notifications it hears. */
const agent = (node: NodeHarness.NodeHarness) =>
  Effect.gen(function* () {
    const changed = yield* Ref.make(0)
    const client = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Client({ name: "test-agent", version: "1.0.0" })
        client.setNotificationHandler(ToolListChangedNotificationSchema, () =>
          Effect.runSync(Ref.update(changed, (n) => n + 1)),
        )
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), {
            requestInit: { headers: tokenHeader(node) },
          }),
        )
        return client
      }),
      (client) => Effect.promise(() => client.close()),
    )
    return { client, changed }
  })

const names = (client: Client) =>
  Effect.promise(() => client.listTools()).pipe(Effect.map((listed) => listed.tools.map((t) => t.name).sort()))

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const DEMO = ["demo__count", "demo__echo"]

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("federation", (it) => {
  it.scoped(
    "A lists demo's tools as its own, calls one in a single tools/call with progress; hidden is not listed",
    () =>
      Effect.gen(function* () {
        const { a, bId, cId } = yield* Mesh
        const { client } = yield* agent(a)
        const listed = yield* eventually(30, names(client), (all) => DEMO.every((n) => all.includes(n)))
        expect(listed.filter((n) => n.includes("__"))).toEqual(DEMO)
        expect(listed).toContain("call_remote_tool")

        const tools = (yield* Effect.promise(() => client.listTools())).tools
        const count = tools.find((t) => t.name === "demo__count")
        // Says where it comes from (a peer that serves it), then the peer's words; the schema unchanged.
        expect(
          [bId, cId].map((peer) => `[mesh: demo on peer ${peer}] Counts up to steps, reporting progress at each step`),
        ).toContain(count?.description)
        expect(count?.inputSchema).toMatchObject({
          type: "object",
          properties: { steps: { type: "integer", minimum: 1, maximum: 10 } },
          required: ["steps"],
        })

        const progress: Array<Progress> = []
        const result = yield* Effect.promise(() =>
          client.request(
            { method: "tools/call", params: { name: "demo__count", arguments: { steps: 3 } } },
            CallToolResultSchema,
            { onprogress: (p) => progress.push(p) },
          ),
        )
        expect(textOf(result)).toMatch(/^(b|c):counted 3$/)
        expect(progress.map((p) => [p.progress, p.total, p.message])).toEqual([
          [1, 3, "step 1"],
          [2, 3, "step 2"],
          [3, 3, "step 3"],
        ])

        // The peer's own checks stand: a bad argument is the peer's tool error, passed on.
        const bad = yield* call(client, "demo__count", { steps: 99 })
        expect(bad.isError).toBe(true)

        // The policy keeps hidden from A: never listed, and calling it by name anyway is a tool error.
        expect(listed.some((n) => n.startsWith("hidden"))).toBe(false)
        const denied = yield* call(client, "hidden__echo", { text: "hi" })
        expect(denied.isError).toBe(true)
        expect(textOf(denied)).toContain("hidden__echo not found")

        // Figures per federated tool, by name only.
        const metrics = yield* tcp(a, "/metrics")
        expect(metrics.text).toMatch(/mesh_node_federated_tool_calls_total\{outcome="ok",tool="demo__count"\} 1/)
        expect(metrics.text).toMatch(
          /mesh_node_federated_tool_calls_total\{outcome="tool_error",tool="demo__count"\} 1/,
        )
      }),
  )

  it.scoped("an agent sees and calls only the federated tools its scope covers", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const minted = yield* socket(a, "/agents/token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "echoer", tools: ["mcp://demo/echo"], ttl: "10m" }),
      })
      expect(minted.status).toBe(200)
      const token = (minted.json as { token: string }).token
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "scoped-agent", version: "1.0.0" })
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
              requestInit: { headers: { "x-mesh-authentication": `Bearer ${token}` } },
            }),
          )
          return client
        }),
        (client) => Effect.promise(() => client.close()),
      )
      // The node's own token sees both of demo's tools; the agent only the one in its scope.
      const { client: own } = yield* agent(a)
      yield* eventually(30, names(own), (all) => DEMO.every((n) => all.includes(n)))
      const listed = yield* eventually(30, names(client), (all) => all.includes("demo__echo"))
      expect(listed.filter((n) => n.includes("__"))).toEqual(["demo__echo"])
      const echoed = yield* call(client, "demo__echo", { text: "hi" })
      expect(echoed.isError).not.toBe(true)
      const refused = yield* call(client, "demo__count", { steps: 1 })
      expect(refused.isError).toBe(true)
    }),
  )

  it.scoped(
    "C takes the calls when B is stopped; when C stops too, the tools leave the list and list_changed comes",
    () =>
      Effect.gen(function* () {
        const { a, cId, stop } = yield* Mesh
        const { client, changed } = yield* agent(a)
        yield* eventually(30, names(client), (all) => DEMO.every((n) => all.includes(n)))
        // Both serve it: calls rotate between them (equal load) once A has found both.
        const answered = new Set<string>()
        const echo = Effect.map(call(client, "demo__echo", { text: "x" }), (result) => {
          answered.add(textOf(result).split(":")[0] ?? "")
          return answered.size
        })
        yield* eventually(30, echo, (size) => size === 2)
        expect([...answered].sort()).toEqual(["b", "c"])

        yield* stop("b")
        for (let i = 0; i < 6; i++) {
          const result = yield* call(client, "demo__echo", { text: `after ${i}` })
          expect(result.isError, textOf(result)).not.toBe(true)
          expect(textOf(result)).toBe(`c:after ${i}`)
        }
        // Search by intent still answers with B gone (its DHT record lingers; asking it fails): C's tools, ranked.
        const found = yield* call(client, "find_remote_tools", { intent: "echo my text back", limit: 1 })
        expect(found.isError).not.toBe(true)
        const rows = (found.structuredContent as { tools: ReadonlyArray<Record<string, unknown>> }).tools
        expect(rows[0]).toMatchObject({ peer_id: cId, tool_name: "mcp://demo/echo", score: expect.any(Number) })
        expect(rows.filter((row) => row.error === undefined)).toHaveLength(1)

        // A's next round drops B: the tools are listed as C lists them.
        const described = Effect.map(
          Effect.promise(() => client.listTools()),
          (listed) => listed.tools.find((t) => t.name === "demo__echo")?.description ?? "",
        )
        yield* eventually(ANNOUNCE_INTERVAL_S, described, (text) => text.includes(cId))

        const before = yield* Ref.get(changed)
        yield* stop("c")
        yield* eventually(ANNOUNCE_INTERVAL_S, Ref.get(changed), (n) => n > before)
        const after = yield* names(client)
        expect(after.filter((n) => n.includes("__"))).toEqual([])
        const gone = yield* call(client, "demo__echo", { text: "x" })
        expect(gone.isError).toBe(true)
      }),
  )

  it.scoped(
    "D stops publishing demo and comes back without it: A drops the tools and says list_changed within the interval",
    () =>
      Effect.gen(function* () {
        const { a, start, onD } = yield* Mesh
        const { client, changed } = yield* agent(a)
        const withDemo = yield* Scope.make()
        const d = yield* start(
          { labels: {}, egress: { require_labels: {} }, services: [http("demo", `${onD.url}/mcp`)] },
          withDemo,
        )
        yield* eventually(30, names(client), (all) => DEMO.every((n) => all.includes(n)))
        expect(textOf(yield* call(client, "demo__echo", { text: "x" }))).toBe("d:x")

        // The same peer again, up and reachable, its DHT record for demo still about, but demo no longer published.
        const before = yield* Ref.get(changed)
        yield* Scope.close(withDemo, Exit.void)
        yield* start({ labels: {}, egress: { require_labels: {} }, services: [] }, yield* Effect.scope, d.dataDir)
        yield* eventually(ANNOUNCE_INTERVAL_S, Ref.get(changed), (n) => n > before)
        expect((yield* names(client)).filter((n) => n.includes("__"))).toEqual([])
        // And it stays out while the peer stays up.
        yield* Effect.sleep(Duration.seconds(4))
        expect((yield* names(client)).filter((n) => n.includes("__"))).toEqual([])
      }),
  )
})

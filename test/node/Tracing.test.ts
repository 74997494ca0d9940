/**
 * Tracing end to end: a control plane, a router and two nodes in this process, each exporting its spans as OTLP/HTTP
 * JSON to a real receiver on loopback under its own service name. An agent on node A, inside a trace of its own,
 * calls an MCP tool on node B through the proxy path and asks for a chat completion only B's provider serves. Each
 * request is one trace across A, B and the backend, its spans one tree under the agent's span; no attribute anywhere
 * holds an API token, the admin token, a node's credential, a tool's arguments or a prompt.
 */
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { join } from "node:path"
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Context, Duration, Effect, Layer, type Scope } from "effect"
import OpenAI from "openai"
import { z } from "zod"
import * as Tracing from "../../src/layers/observability/Tracing.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { type OpenAiBackend, openAi } from "../support/openai.js"
import { type Exported, type Receiver, receiver } from "../support/otlpReceiver.js"
import { eventually, tcp } from "./support.js"

/** A stateless MCP server with one `echo` tool, recording the `traceparent` of every request it gets. */
const mcpBackend = (seen: Array<string>): Effect.Effect<{ readonly url: string }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer((req: IncomingMessage, res: ServerResponse) => {
        const traceparent = req.headers.traceparent
        if (typeof traceparent === "string") seen.push(traceparent)
        const mcp = new McpServer({ name: "traced", version: "1.0.0" })
        mcp.registerTool("echo", { description: "echoes", inputSchema: { text: z.string() } }, (args) => ({
          content: [{ type: "text", text: args.text }],
        }))
        const transport = new StreamableHTTPServerTransport({})
        res.on("close", () => {
          void transport.close()
          void mcp.close()
        })
        void mcp.connect(transport).then(() => transport.handleRequest(req, res))
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.sync(() => {
        server.closeAllConnections()
        server.close()
      }),
  ).pipe(
    Effect.map((server) => {
      const address = server.address()
      return { url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}` }
    }),
  )

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://tools", "inference://*"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

/** Words that must never reach a span: a tool argument and a prompt. */
const TOOL_ARGUMENT = `argument-${randomBytes(8).toString("hex")}`
const PROMPT = `prompt-${randomBytes(8).toString("hex")}`

class Mesh extends Context.Tag("test/TracingMesh")<
  Mesh,
  {
    readonly cp: ControlPlaneHarness.ControlPlaneHarness
    readonly a: NodeHarness.NodeHarness
    readonly b: NodeHarness.NodeHarness
    readonly bId: string
    readonly collector: Receiver
    readonly beta: OpenAiBackend
    readonly mcpSeen: Array<string>
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const collector = yield* receiver
    const tracing = (serviceName: string) =>
      Tracing.layer({ endpoint: collector.url, serviceName, attributes: {}, scheduleDelay: Duration.millis(100) })
    const mcpSeen: Array<string> = []
    const tools = yield* mcpBackend(mcpSeen)
    const beta = yield* openAi({ name: "beta", models: ["model-b"] })
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true, tracing: tracing("test-control-plane") })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp, { tracing: tracing("test-router") })
    const a = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [] },
      tracing: tracing("node-a"),
    })
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [
          { name: "tools", type: "mcp", description: "", target_url: `${tools.url}/mcp`, env: {} },
          { name: "beta", type: "inference", description: "", target_url: beta.url, env: {} },
        ],
      },
      tracing: tracing("node-b"),
    })
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    // A knows B's provider before the completion is asked for.
    yield* eventually(
      30,
      tcp(a, "/mesh/service/discover?type=inference&timeout=5s").pipe(
        Effect.map((reply) => (reply.json as ReadonlyArray<unknown>).length),
      ),
      (n) => n === 1,
    )
    return { cp, a, b, bId: yield* b.peerId, collector, beta, mcpSeen }
  }),
)

const hex = (bytes: number) => randomBytes(bytes).toString("hex")

/** The agent's own span: a trace id and span id its request names in `traceparent`. */
const agentSpan = () => {
  const traceId = hex(16)
  const spanId = hex(8)
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

/** Whether every span's parent is the agent's span or another span of the set. */
const closed = (spans: ReadonlyArray<Exported>, agentSpanId: string) => {
  const ids = new Set(spans.map((s) => s.spanId))
  return spans.every((s) => s.parentSpanId === agentSpanId || ids.has(s.parentSpanId))
}

/**
 * The spans of one trace once they are all in: children are exported before their parents end, so the set is
 * complete when every parent is in it and `complete` holds.
 */
const traceOf = (
  collector: Receiver,
  agent: { readonly traceId: string; readonly spanId: string },
  complete: (spans: ReadonlyArray<Exported>) => boolean,
) =>
  eventually(
    30,
    Effect.sync(() => collector.spans.filter((s) => s.traceId === agent.traceId)),
    (spans) => spans.length > 0 && closed(spans, agent.spanId) && complete(spans),
  )

/** Every span's parent is the agent's span or another span of the trace: one tree, rooted at the agent. */
const expectOneTree = (spans: ReadonlyArray<Exported>, agentSpanId: string) => {
  const ids = new Set(spans.map((s) => s.spanId))
  for (const span of spans) {
    expect(span.parentSpanId === agentSpanId || ids.has(span.parentSpanId), `${span.service} ${span.name}`).toBe(true)
  }
  // Following parents from any span reaches the agent's span without a cycle.
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  for (const span of spans) {
    let current: Exported | undefined = span
    const visited = new Set<string>()
    while (current !== undefined && current.parentSpanId !== agentSpanId) {
      expect(visited.has(current.spanId)).toBe(false)
      visited.add(current.spanId)
      current = byId.get(current.parentSpanId)
    }
    expect(current?.parentSpanId).toBe(agentSpanId)
  }
}

/** The span `traceparent` names, parsed: trace id and parent span id. */
const parse = (traceparent: string) => {
  const [, traceId, spanId] = traceparent.split("-")
  return { traceId, spanId }
}

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(2) })("tracing across the mesh", (it) => {
  it.effect("a proxied MCP tool call is one trace across node A, node B and the MCP backend", () =>
    Effect.gen(function* () {
      const { a, bId, collector, mcpSeen } = yield* Mesh
      const agent = agentSpan()
      const text = yield* Effect.promise(async () => {
        const client = new Client({ name: "agent", version: "1" })
        const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mesh/${bId}/mcp/tools`), {
          requestInit: {
            headers: { "x-mesh-authentication": `Bearer ${a.apiToken}`, traceparent: agent.traceparent },
          },
        })
        await client.connect(transport)
        const result = await client.callTool({ name: "echo", arguments: { text: TOOL_ARGUMENT } })
        await client.close()
        return (result.content as Array<{ text: string }>)[0]?.text
      })
      expect(text).toBe(TOOL_ARGUMENT)

      const told = mcpSeen.map(parse).filter((p) => p.traceId === agent.traceId)
      expect(told.length).toBeGreaterThan(0)
      const spans = yield* traceOf(collector, agent, (found) =>
        told.every((p) => found.some((s) => s.spanId === p.spanId)),
      )
      expectOneTree(spans, agent.spanId)
      // A's server spans are named by route template, never by the raw path with B's peer id in it.
      const served = spans.filter((s) => s.service === "node-a" && s.parentSpanId === agent.spanId)
      expect(served.length).toBeGreaterThan(0)
      for (const span of served) {
        expect(span.name).toMatch(/^(POST|GET|DELETE) \/mesh\/:peer\/:type\/:name\/\*$/)
        expect(span.attributes["http.route"]).toBe("/mesh/:peer/:type/:name/*")
        expect(JSON.stringify(span)).not.toContain(bId)
      }
      // B's ingress continues A's proxy span; B's backend hop is what the MCP server was told of.
      const ingress = spans.filter((s) => s.service === "node-b" && s.name === "mesh.ingress")
      expect(ingress.length).toBeGreaterThan(0)
      const proxySpans = new Set(
        spans.filter((s) => s.service === "node-a" && s.name === "mesh.proxy").map((s) => s.spanId),
      )
      for (const span of ingress) expect(proxySpans.has(span.parentSpanId)).toBe(true)
      const backendHops = new Set(
        spans.filter((s) => s.service === "node-b" && s.name === "mesh.backend").map((s) => s.spanId),
      )
      for (const p of told) expect(backendHops.has(p.spanId as string)).toBe(true)
      // Every traceparent the backend saw for this trace names one of B's hops: none is the agent's own.
      expect(mcpSeen.filter((t) => t === agent.traceparent)).toEqual([])
    }),
  )

  it.effect("a remote tool call through A's MCP server is one trace: the tool's span on A, B's hop, the backend", () =>
    Effect.gen(function* () {
      const { a, bId, collector, mcpSeen } = yield* Mesh
      const agent = agentSpan()
      const result = yield* Effect.promise(async () => {
        const client = new Client({ name: "agent", version: "1" })
        const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
          requestInit: {
            headers: { "x-mesh-authentication": `Bearer ${a.apiToken}`, traceparent: agent.traceparent },
          },
        })
        await client.connect(transport)
        const answer = await client.callTool({
          name: "call_remote_tool",
          arguments: { peer_id: bId, tool_name: "mcp://tools/echo", arguments: { text: TOOL_ARGUMENT } },
        })
        await client.close()
        return answer
      })
      expect(JSON.stringify(result)).toContain(TOOL_ARGUMENT)

      const told = () => mcpSeen.map(parse).filter((p) => p.traceId === agent.traceId)
      const spans = yield* traceOf(
        collector,
        agent,
        (found) => told().length > 0 && told().every((p) => found.some((s) => s.spanId === p.spanId)),
      )
      expectOneTree(spans, agent.spanId)
      const tool = spans.find((s) => s.name === "mcp.tool")
      expect(tool).toMatchObject({ service: "node-a", attributes: { "mcp.tool.name": "call_remote_tool" } })
      // The tool's span is under A's /mcp request, and B's hop is under the tool's span.
      const byId = new Map(spans.map((s) => [s.spanId, s]))
      expect(byId.get(tool?.parentSpanId ?? "")?.name).toBe("POST /mcp")
      const ancestors = (span: Exported): Array<string> => {
        const chain: Array<string> = []
        for (let at = byId.get(span.parentSpanId); at !== undefined; at = byId.get(at.parentSpanId))
          chain.push(at.spanId)
        return chain
      }
      const ingress = spans.filter((s) => s.service === "node-b" && s.name === "mesh.ingress")
      expect(ingress.length).toBeGreaterThan(0)
      for (const span of ingress) expect(ancestors(span)).toContain(tool?.spanId)
    }),
  )

  it.effect("a remote chat completion is one trace across node A, node B and the provider", () =>
    Effect.gen(function* () {
      const { a, collector, beta } = yield* Mesh
      const agent = agentSpan()
      const answer = yield* Effect.promise(() =>
        new OpenAI({ baseURL: `${a.url}/v1`, apiKey: a.apiToken, maxRetries: 0 }).chat.completions.create(
          { model: "model-b", messages: [{ role: "user", content: PROMPT }] },
          { headers: { traceparent: agent.traceparent } },
        ),
      )
      expect(answer.choices[0]?.message.content).toContain("beta")

      const received = beta.requests.filter((r) => typeof r.headers.traceparent === "string")
      const told = received.map((r) => parse(String(r.headers.traceparent))).find((p) => p.traceId === agent.traceId)
      expect(told).toBeDefined()
      const spans = yield* traceOf(
        collector,
        agent,
        (found) => found.some((s) => s.spanId === told?.spanId) && found.some((s) => s.parentSpanId === agent.spanId),
      )
      expectOneTree(spans, agent.spanId)
      const root = spans.find((s) => s.service === "node-a" && s.parentSpanId === agent.spanId)
      expect(root?.name).toBe("POST /v1/chat/completions")
      expect(root?.attributes["http.response.status_code"]).toBe(200)
      const attempt = spans.find((s) => s.service === "node-a" && s.name === "inference.attempt")
      expect(attempt?.attributes).toMatchObject({
        "gen_ai.request.model": "model-b",
        "mesh.inference.provider": "beta",
        "mesh.inference.local": false,
        "mesh.inference.fallback": false,
      })
      expect(spans.some((s) => s.service === "node-b" && s.name === "mesh.ingress")).toBe(true)
      // The provider continues B's backend hop.
      const hop = spans.find((s) => s.spanId === told?.spanId)
      expect(hop).toMatchObject({ service: "node-b", name: "mesh.backend" })
    }),
  )

  it.effect("the control plane continues a caller's traceparent, naming its span by route template", () =>
    Effect.gen(function* () {
      const { cp, collector } = yield* Mesh
      const agent = agentSpan()
      const call = (method: string, path: string) =>
        Effect.promise(() =>
          fetch(`${cp.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${cp.adminToken}`, traceparent: agent.traceparent },
          }).then((r) => r.status),
        )
      expect(yield* call("GET", "/admin/bootstrap-tokens?limit=5")).toBe(200)
      const unknown = `enr-${hex(6)}`
      expect(yield* call("POST", `/admin/enrollments/${unknown}/reject`)).toBe(404)
      const spans = yield* traceOf(
        collector,
        agent,
        (found) => found.filter((s) => s.parentSpanId === agent.spanId).length === 2,
      )
      expectOneTree(spans, agent.spanId)
      const roots = spans.filter((s) => s.parentSpanId === agent.spanId)
      expect(roots.find((s) => s.attributes["http.request.method"] === "GET")).toMatchObject({
        service: "test-control-plane",
        name: "GET /admin/bootstrap-tokens",
        attributes: { "http.route": "/admin/bootstrap-tokens", "http.response.status_code": 200 },
      })
      // A path parameter never makes a span name or attribute: the route template does.
      expect(roots.find((s) => s.attributes["http.request.method"] === "POST")).toMatchObject({
        service: "test-control-plane",
        name: "POST /admin/enrollments/:id/reject",
        attributes: { "http.route": "/admin/enrollments/:id/reject", "http.response.status_code": 404 },
      })
      expect(JSON.stringify(spans)).not.toContain(unknown)
      // Its SQL statements are spans of their own, with the statement's kind and never its text.
      const sql = spans.filter((s) => s.name === "sql.execute")
      expect(sql.length).toBeGreaterThan(0)
      for (const span of sql) {
        expect(span.attributes["db.operation.name"]).toMatch(/^[A-Z]+$/)
        expect(span.attributes["db.query.text"]).toBeUndefined()
      }
    }),
  )

  it.effect("no exported attribute holds a token, a credential, a tool argument or a prompt", () =>
    Effect.gen(function* () {
      const { cp, a, b, collector } = yield* Mesh
      yield* eventually(
        30,
        Effect.sync(() => new Set(collector.spans.map((s) => s.service))),
        (services) => ["test-control-plane", "test-router", "node-a", "node-b"].every((s) => services.has(s)),
      )
      const credentials = [a, b].map((node) => {
        const file = JSON.parse(readFileSync(join(node.dataDir, "credential.json"), "utf8")) as { credential: string }
        return file.credential
      })
      const secrets = [
        a.apiToken,
        b.apiToken,
        cp.adminToken,
        ...credentials,
        ...credentials.map((c) => Buffer.from(c, "hex").toString("base64")),
        ...credentials.map((c) => Buffer.from(c, "hex").toString("base64url")),
        TOOL_ARGUMENT,
        PROMPT,
      ]
      expect(collector.bodies.length).toBeGreaterThan(0)
      const everything = collector.bodies.join("\n")
      for (const secret of secrets) expect(everything.includes(secret), secret.slice(0, 12)).toBe(false)
      // Nothing recorded a header, a full URL or a statement's text.
      const keys = new Set(collector.spans.flatMap((s) => Object.keys(s.attributes)))
      for (const key of keys) {
        expect(key).not.toMatch(
          /^(http\.(request|response)\.header\.|url\.full|url\.query|db\.query\.text|code\.stacktrace)/,
        )
      }
    }),
  )
})

/**
 * The proxy to a peer's MCP service in both eras (issue 50, item 5), node A calling node B:
 * - a modern-only server (2026-07-28, `legacy: 'reject'`) is reached through the proxy with stateless requests;
 * - B refuses a request whose Mcp-Method / Mcp-Name / Mcp-Param-* headers disagree with its body (400, -32020) before
 *   it reaches the backend, under a grant of single tools and a whole-service grant alike; a grant of one tool cannot
 *   be passed by naming that tool in the headers and another in the body;
 * - a 2025-era session's GET stream is open at the backend before the session's next request reaches it, even when
 *   the backend takes its time to open it (a request that overtook the GET found no stream for the server's own
 *   requests);
 * - B's /metrics counts the sessions it relays for peers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import * as Conformance from "./conformance.js"
import { eventually, mcpHeaders, mcpInitialize, type Reply, tcp } from "./support.js"

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://modern/echo", "mcp://whole", "mcp://ordered"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
}

const call = (name: string, args: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id: 5,
  method: "tools/call",
  params: { name, arguments: args, _meta: META },
})

/**
 * A 2025-era backend that is slow to open a session's GET stream (300 ms), and answers a tool call with whether that
 * stream was open when the call arrived: where the server would have sent its own requests.
 */
const orderedBackend = Effect.acquireRelease(
  Effect.async<ReturnType<typeof createServer>>((resume) => {
    let streamOpen = false
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        if (req.method === "GET") {
          setTimeout(() => {
            streamOpen = true
            res.writeHead(200, { "content-type": "text/event-stream", "mcp-session-id": "s1" })
            res.flushHeaders()
          }, 300)
          res.on("close", () => {
            streamOpen = false
          })
          return
        }
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { id?: number; method?: string }
        if (req.method === "DELETE") return void res.writeHead(200).end()
        const result =
          body.method === "initialize" ? { protocolVersion: "2025-06-18", capabilities: {} } : { streamOpen }
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" })
        res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, result }))
      })
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    }),
)

class Mesh extends Effect.Service<Mesh>()("test/ProxyMcpEras/Mesh", {
  scoped: Effect.gen(function* () {
    const modern = yield* Conformance.fixture("mcpModernServer.mjs")
    const ordered = yield* orderedBackend
    const orderedUrl = `http://127.0.0.1:${(ordered.address() as AddressInfo).port}/mcp`
    const cp = yield* Harness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const service = (name: string, url: string) => ({
      name,
      type: "mcp" as const,
      description: "",
      target_url: url,
      env: {},
    })
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [service("modern", modern.url), service("whole", modern.url), service("ordered", orderedUrl)],
      },
    })
    const a = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    const bId = yield* b.peerId
    // B holds the policy once a granted call passes.
    yield* eventually(
      60,
      post(a, `/mesh/${bId}/mcp/whole`, call("echo", { text: "x" }), modernHeaders("tools/call", "echo")),
      (reply) => reply.status === 200,
    )
    return { a, b, bId }
  }),
}) {}

const modernHeaders = (method: string, name?: string, extra: Record<string, string> = {}) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2026-07-28",
  "mcp-method": method,
  ...(name === undefined ? {} : { "mcp-name": name }),
  ...extra,
})

const post = (node: NodeHarness.NodeHarness, path: string, body: unknown, headers: Record<string, string>) =>
  tcp(node, path, {
    method: "POST",
    headers: { "x-mesh-authentication": `Bearer ${node.apiToken}`, ...headers },
    body: JSON.stringify(body),
  })

const errorOf = (reply: Reply) => (reply.json as { error?: { code: number; message: string } }).error

layer(Mesh.Default, { excludeTestServices: true, timeout: Duration.minutes(2) })(
  "the proxy to a peer's MCP service, both eras",
  (it) => {
    it.scoped("a modern-only server answers stateless requests through the proxy", () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const reply = yield* post(
          a,
          `/mesh/${bId}/mcp/whole`,
          call("echo", { text: "hello" }),
          modernHeaders("tools/call", "echo"),
        )
        expect(reply.status).toBe(200)
        expect(reply.text).toContain("hello")
        expect(reply.headers.get("mcp-session-id")).toBeNull()
      }),
    )

    it.scoped("headers naming the granted tool over a body calling another are refused at B with -32020", () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const path = `/mesh/${bId}/mcp/modern`
        const allowed = yield* post(a, path, call("echo", { text: "granted" }), modernHeaders("tools/call", "echo"))
        expect(allowed.status).toBe(200)
        expect(allowed.text).toContain("granted")
        // The bypass: the headers show the granted tool, the body calls another.
        const bypass = yield* post(a, path, call("test_simple_text", {}), modernHeaders("tools/call", "echo"))
        expect(bypass.status).toBe(400)
        expect(errorOf(bypass)).toEqual({ code: -32020, message: expect.stringMatching(/^Header mismatch: Mcp-Name/) })
        expect((bypass.json as { id: unknown }).id).toBe(5)
        // Headers and body agreeing on the other tool: the grant refuses it, as ever.
        const honest = yield* post(
          a,
          path,
          call("test_simple_text", {}),
          modernHeaders("tools/call", "test_simple_text"),
        )
        expect(errorOf(honest)?.code).toBe(-32003)
        const method = yield* post(a, path, call("echo", { text: "x" }), modernHeaders("tools/list"))
        expect(errorOf(method)).toEqual({
          code: -32020,
          message: expect.stringMatching(/^Header mismatch: Mcp-Method/),
        })
      }),
    )

    it.scoped("a whole-service grant gets the same refusal, from B and not from the backend", () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const path = `/mesh/${bId}/mcp/whole`
        const name = yield* post(a, path, call("test_simple_text", {}), modernHeaders("tools/call", "echo"))
        expect(name.status).toBe(400)
        // The SDK's own answer words it differently: this one is B's.
        expect(errorOf(name)).toEqual({ code: -32020, message: expect.stringMatching(/^Header mismatch: Mcp-Name/) })
        const param = yield* post(
          a,
          path,
          call("echo", { text: "x" }),
          modernHeaders("tools/call", "echo", { "mcp-param-text": "=?base64?not base64?=" }),
        )
        expect(errorOf(param)).toEqual({ code: -32020, message: expect.stringMatching(/mcp-param-text/) })
        const version = yield* post(
          a,
          path,
          call("echo", { text: "x" }),
          modernHeaders("tools/call", "echo", { "mcp-protocol-version": "2025-11-25" }),
        )
        expect(errorOf(version)).toEqual({ code: -32020, message: expect.stringMatching(/MCP-Protocol-Version/) })
      }),
    )

    it.scoped("a 2025 session's GET stream is open at the backend before the session's next request arrives", () =>
      Effect.gen(function* () {
        const { a, b, bId } = yield* Mesh
        const path = `/mesh/${bId}/mcp/ordered`
        const opened = yield* post(a, path, mcpInitialize, {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        })
        expect(opened.headers.get("mcp-session-id")).toBe("s1")
        const session = { ...mcpHeaders(a), "mcp-session-id": "s1", "mcp-protocol-version": "2025-06-18" }
        const controller = new AbortController()
        // The GET leaves first and is not waited for, as an MCP client opens it; the call follows at once.
        const stream = fetch(`${a.url}${path}`, {
          headers: { ...session, accept: "text/event-stream" },
          signal: controller.signal,
        }).catch(() => undefined)
        const answer = yield* tcp(a, path, {
          method: "POST",
          headers: session,
          body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "x", arguments: {} } }),
        })
        expect(answer.json).toEqual({ jsonrpc: "2.0", id: 2, result: { streamOpen: true } })
        // B relays this session for A: its gauge counts it.
        const metrics = yield* tcp(b, "/metrics")
        expect(metrics.text).toMatch(/mesh_node_mcp_sessions\{side="peers"\} [1-9]/)
        expect(metrics.text).toMatch(/mesh_node_mcp_sessions\{side="agents"\} 0/)
        controller.abort()
        yield* Effect.promise(() => stream)
      }),
    )
  },
)

/**
 * MCP services as the serving peer guards them: grants whole or tool by tool, and sessions bound to the peer that
 * opened them. A control plane, a router and three nodes in this process over loopback. B publishes two HTTP MCP
 * servers (`sse` answers with event streams, `json` with JSON) and a stdio server (`stdio`), each with an `echo`
 * tool. A holds the whole services; C holds only their `echo`. Both reach them through the proxy path and through
 * `call_remote_tool`.
 */
import { join } from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Layer } from "effect"
import type * as NodeFile from "../../src/domain/NodeFile.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, mcpHeaders, mcpInitialize, tcp, tokenHeader } from "./support.js"

const root = join(import.meta.dirname, "..", "..")
const SERVICES = ["sse", "json", "stdio"] as const

const policy = (wholeHolder: string, toolHolder: string) => ({
  roles: [
    { name: "mesh:role:node", allowed_labels: ["*"], allowed_services: [], allowed_targets: ["*"] },
    { name: "whole", allowed_services: [...SERVICES, "cut"].map((s) => `mcp://${s}`), allowed_targets: ["*"] },
    { name: "one-tool", allowed_services: SERVICES.map((s) => `mcp://${s}/echo`), allowed_targets: ["*"] },
  ],
  bindings: [
    { role: "whole", members: [`node:${wholeHolder}`] },
    { role: "one-tool", members: [`node:${toolHolder}`] },
  ],
})

const http = (name: string, url: string): NodeFile.ServiceSpec => ({
  name,
  type: "mcp",
  description: name,
  target_url: url,
  env: {},
})

class Mesh extends Context.Tag("test/McpGrantsMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly c: NodeHarness.NodeHarness
    readonly bId: string
    /** B's `cut` service, whose tool calls can be cut off. */
    readonly cut: Backends.StatefulMcp
  }
>() {}

/** A stock MCP client on the proxy path to B's service. */
const proxied = (node: NodeHarness.NodeHarness, bId: string, service: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "grant-test", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${node.url}/mesh/${bId}/mcp/${service}`), {
          requestInit: { headers: tokenHeader(node) },
        }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

/** A stock MCP client on the node's own `/mcp`. */
const agent = (node: NodeHarness.NodeHarness) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "grant-agent", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), { requestInit: { headers: tokenHeader(node) } }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const sse = yield* Backends.statefulMcp()
    const json = yield* Backends.statefulMcp(undefined, { json: true })
    const cut = yield* Backends.statefulMcp()
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [
          http("sse", `${sse.url}/mcp`),
          http("json", `${json.url}/mcp`),
          http("cut", `${cut.url}/mcp`),
          {
            name: "stdio",
            type: "mcp",
            description: "stdio",
            command: [process.execPath, join(root, "test", "support", "stdioServer.mjs")],
            env: {},
          },
        ],
      },
    })
    const a = yield* NodeHarness.make(cp)
    const c = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected, c.connected], { concurrency: "unbounded" })
    const bId = yield* b.peerId
    yield* setPolicy(cp, policy(yield* a.peerId, yield* c.peerId))
    // B holds the policy once A's initialize, which only A's binding allows, is let through.
    const initialize = tcp(a, `/mesh/${bId}/mcp/json`, {
      method: "POST",
      headers: mcpHeaders(a),
      body: JSON.stringify(mcpInitialize),
    })
    yield* eventually(60, initialize, (reply) => reply.status === 200)
    return { a, c, bId, cut }
  }),
)

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

/** The error a call was refused with, as the SDK client throws it. */
const refusal = (effect: Promise<unknown>) =>
  Effect.promise(() =>
    effect.then(
      () => "no error",
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    ),
  )

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("MCP services on a peer", (it) => {
  describe("a grant of one tool", () => {
    it.effect("through the proxy: the session opens, the list holds only the tool, other tools are refused", () =>
      Effect.gen(function* () {
        const { c, bId } = yield* Mesh
        for (const service of SERVICES) {
          const client = yield* proxied(c, bId, service)
          const tools = yield* Effect.promise(() => client.listTools())
          expect({ service, tools: tools.tools.map((t) => t.name) }).toEqual({ service, tools: ["echo"] })
          yield* Effect.promise(() => client.ping())
          const echo = (yield* Effect.promise(() =>
            client.callTool({ name: "echo", arguments: { text: "granted" } }),
          )) as CallToolResult
          expect(textOf(echo)).toBe("granted")
          const other = service === "stdio" ? "pid" : "fail"
          const denied = yield* refusal(client.callTool({ name: other, arguments: {} }))
          expect(denied).toContain("-32003")
          expect(denied).toContain(
            `denied by policy rule allowed_services: no role of the caller lists the tool mcp://${service}/${other}`,
          )
          // Methods beyond tools are not part of a tool grant.
          const prompts = yield* refusal(client.listPrompts())
          expect(prompts).toContain("denied by policy rule allowed_services")
        }
      }).pipe(Effect.scoped),
    )

    it.effect("a batch with one refused call is refused whole, each request answered with an error", () =>
      Effect.gen(function* () {
        const { c, bId } = yield* Mesh
        const path = `/mesh/${bId}/mcp/json`
        const opened = yield* tcp(c, path, {
          method: "POST",
          headers: mcpHeaders(c),
          body: JSON.stringify(mcpInitialize),
        })
        const session = opened.headers.get("mcp-session-id") ?? ""
        expect(session).not.toBe("")
        const call = (id: number, name: string) => ({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name, arguments: { text: "x" } },
        })
        const batch = yield* tcp(c, path, {
          method: "POST",
          headers: { ...mcpHeaders(c), "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
          body: JSON.stringify([call(7, "echo"), call(8, "fail"), { jsonrpc: "2.0", method: "notifications/x" }]),
        })
        expect(batch.status).toBe(200)
        const answers = batch.json as ReadonlyArray<{ id: number; error: { code: number; message: string } }>
        expect(answers.map((a) => [a.id, a.error.code])).toEqual([
          [7, -32003],
          [8, -32003],
        ])
        expect(answers[0]?.error.message).toContain("another message of this batch was refused")
        expect(answers[1]?.error.message).toContain("mcp://json/fail")
      }),
    )

    it.effect("through call_remote_tool: the granted tool answers, another is a tool error naming the rule", () =>
      Effect.gen(function* () {
        const { c, bId } = yield* Mesh
        const client = yield* agent(c)
        for (const service of SERVICES) {
          const echo = (yield* Effect.promise(() =>
            client.callTool({
              name: "call_remote_tool",
              arguments: { peer_id: bId, tool_name: `mcp://${service}/echo`, arguments: { text: "via agent" } },
            }),
          )) as CallToolResult
          expect({ service, error: echo.isError, text: textOf(echo) }).toEqual({
            service,
            error: undefined,
            text: "via agent",
          })
          const other = service === "stdio" ? "pid" : "fail"
          const denied = (yield* Effect.promise(() =>
            client.callTool({
              name: "call_remote_tool",
              arguments: { peer_id: bId, tool_name: `mcp://${service}/${other}`, arguments: {} },
            }),
          )) as CallToolResult
          expect(denied.isError).toBe(true)
          expect(textOf(denied)).toContain("denied by policy rule allowed_services")
        }
      }).pipe(Effect.scoped),
    )
  })

  describe("a grant of the whole service", () => {
    it.effect("through the proxy and call_remote_tool: every tool is listed and called", () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        for (const service of SERVICES) {
          const client = yield* proxied(a, bId, service)
          const names = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
          const other = service === "stdio" ? "pid" : "fail"
          expect(names).toEqual(expect.arrayContaining(["echo", other]))
          const result = (yield* Effect.promise(() =>
            client.callTool({ name: other, arguments: {} }),
          )) as CallToolResult
          expect(textOf(result)).not.toContain("denied")
        }
        const client = yield* agent(a)
        const failed = (yield* Effect.promise(() =>
          client.callTool({
            name: "call_remote_tool",
            arguments: { peer_id: bId, tool_name: "mcp://sse/fail", arguments: {} },
          }),
        )) as CallToolResult
        expect(textOf(failed)).toBe("it failed on purpose")
      }).pipe(Effect.scoped),
    )
  })

  describe("sessions of HTTP backends", () => {
    it.effect("a session B opened for A's first call is A's, though that call failed on the way", () =>
      Effect.gen(function* () {
        const { a, bId, cut } = yield* Mesh
        const client = yield* agent(a)
        const echo = (text: string) =>
          Effect.promise(
            () =>
              client.callTool({
                name: "call_remote_tool",
                arguments: { peer_id: bId, tool_name: "mcp://cut/echo", arguments: { text } },
              }) as Promise<CallToolResult>,
          )
        // B opens the session, then the backend goes away in the middle of the call.
        cut.cutCalls(true)
        const failed = yield* echo("lost")
        expect(failed.isError).toBe(true)
        expect(textOf(failed)).toContain("may have run")
        cut.cutCalls(false)
        // The next call goes in that session: B named it in its own answer.
        const answered = yield* echo("kept")
        expect(answered.isError).toBeUndefined()
        expect(textOf(answered)).toBe("kept")
        expect(cut.sessionsBy(yield* a.peerId)).toBe(1)
        expect(cut.unsessioned()).toBe(0)
      }).pipe(Effect.scoped),
    )

    it.effect("a session belongs to the peer that opened it: another peer presenting its id gets 404", () =>
      Effect.gen(function* () {
        const { a, c, bId } = yield* Mesh
        const path = `/mesh/${bId}/mcp/json`
        const opened = yield* tcp(a, path, {
          method: "POST",
          headers: mcpHeaders(a),
          body: JSON.stringify(mcpInitialize),
        })
        const session = opened.headers.get("mcp-session-id") ?? ""
        expect(session).not.toBe("")
        const list = (node: NodeHarness.NodeHarness) =>
          tcp(node, path, {
            method: "POST",
            headers: { ...mcpHeaders(node), "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
          })
        const stolen = yield* list(c)
        expect(stolen.status).toBe(404)
        expect(stolen.json).toMatchObject({ error: { message: "Session not found" } })
        const own = yield* list(a)
        expect(own.status).toBe(200)
        expect(JSON.stringify(own.json)).toContain("echo")
        // Ended by its owner, the session is unknown to everyone.
        const ended = yield* tcp(a, path, {
          method: "DELETE",
          headers: { ...tokenHeader(a), "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
        })
        expect(ended.status).toBe(200)
        expect((yield* list(a)).status).toBe(404)
      }),
    )
  })
})

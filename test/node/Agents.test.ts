/**
 * Agents as principals, end to end: a control plane, a router and three nodes in this process over loopback. B
 * serves the demo MCP tools (`word_count`, `sha256`) and an A2A echo backend that records the `X-Mesh-Agent` it is
 * sent. A mints its agent `ide` from `agents:` in its configuration (scope: `mcp://demo/word_count` and
 * `a2a://echo`); C is another node. Real MCP SDK clients, real HTTP, traces to a real OTLP receiver.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { createServer } from "node:http"
import { join } from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import OpenAI, { PermissionDeniedError } from "openai"
import * as DemoInference from "../../src/demo/DemoInference.js"
import * as DemoMcpServer from "../../src/demo/DemoMcpServer.js"
import type * as AgentScope from "../../src/domain/AgentScope.js"
import * as Tracing from "../../src/layers/observability/Tracing.js"
import { Membership } from "../../src/services/member/Membership.js"
import { PeerProxy } from "../../src/services/proxy/PeerProxy.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { receiver } from "../support/otlpReceiver.js"
import { eventually, type Reply, socket, tcp } from "./support.js"

/** Text that must never reach a log, a metric or a trace. */
const ARGUMENT = "argument-text-4c1d7e"
const FORBIDDEN_ARGUMENT = "forbidden-argument-9b2f"
const BODY = "request-body-text-73aa"
const PROMPT = "prompt-text-e5d0c2"

const POLICY = {
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["*"], allowed_targets: ["*"] }],
  bindings: [],
}

class Mesh extends Context.Tag("test/AgentsMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly b: NodeHarness.NodeHarness
    readonly c: NodeHarness.NodeHarness
    readonly bId: string
    /** `X-Mesh-Agent` as the echo backend received it, per request (`-` when absent). */
    readonly agentsSeen: Array<string>
    readonly traces: Array<string>
    readonly stopControlPlane: Effect.Effect<void>
  }
>() {}

const echo = Effect.acquireRelease(
  Effect.async<{ server: ReturnType<typeof createServer>; seen: Array<string>; url: string }>((resume) => {
    const seen: Array<string> = []
    const server = createServer((req, res) => {
      if (req.url === "/.well-known/agent-card.json") {
        const card = { name: "echo", description: "echo", url: "http://127.0.0.1/", version: "1", capabilities: {} }
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(card))
        return
      }
      const header = req.headers["x-mesh-agent"]
      // The token itself never reaches a backend.
      const leaked = Object.keys(req.headers).some(
        (h) => h.startsWith("x-mesh-agent-") || h === "x-mesh-authentication",
      )
      seen.push(`${typeof header === "string" ? header : "-"}${leaked ? "+token" : ""}`)
      req.resume()
      req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end("ok"))
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ server, seen, url: `http://127.0.0.1:${port}` }))
    })
  }),
  ({ server }) => Effect.sync(() => server.close()),
)

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const collector = yield* receiver
    const tracing = (serviceName: string) =>
      Tracing.layer({ endpoint: collector.url, serviceName, attributes: {}, scheduleDelay: Duration.millis(100) })
    const demo = yield* DemoMcpServer.make(0)
    const inference = yield* DemoInference.make(0)
    const backend = yield* echo
    // The control plane lives in a scope of its own, so that a test can stop it.
    const cpScope = yield* Scope.make()
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true }).pipe(Scope.extend(cpScope))
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      tracing: tracing("node-b"),
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [
          { name: "demo", type: "mcp", description: "demo", target_url: demo, env: {} },
          { name: "echo", type: "a2a", description: "echo", target_url: backend.url, env: {} },
          { name: "demo", type: "inference", description: "demo model", target_url: inference, env: {} },
        ],
      },
    })
    const a = yield* NodeHarness.make(cp, {
      tracing: tracing("node-a"),
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [],
        agents: [
          {
            id: "ide",
            services: ["a2a://echo"],
            tools: ["mcp://demo/word_count"],
            models: [],
            methods: [],
            paths: [],
            labels: {},
            ttl: "1h",
            token_file: "agents/ide.token",
          },
        ],
      },
    })
    const c = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected, c.connected], { concurrency: "unbounded" })
    return {
      a,
      b,
      c,
      bId: yield* b.peerId,
      agentsSeen: backend.seen,
      traces: collector.bodies,
      stopControlPlane: Scope.close(cpScope, Exit.void),
    }
  }),
)

const tokenOf = (node: NodeHarness.NodeHarness) =>
  eventually(
    60,
    Effect.sync(() => {
      try {
        return readFileSync(join(node.dataDir, "agents", "ide.token"), "utf8").trim()
      } catch {
        return ""
      }
    }),
    (text) => text.length > 0,
  )

const bearer = (token: string) => ({ "x-mesh-authentication": `Bearer ${token}` })

const client = (url: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const mcp = new Client({ name: "agent-test", version: "1.0.0" })
      await mcp.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: bearer(token) } }))
      return mcp
    }),
    (mcp) => Effect.promise(() => mcp.close()),
  )

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const mint = (node: NodeHarness.NodeHarness, body: Record<string, unknown>) =>
  socket(node, "/agents/token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  })

interface LogEntry {
  readonly agent: string
  readonly side: string
  readonly outcome: string
  readonly rule: string
  readonly target: string
  readonly service: string
}
const logOf = (node: NodeHarness.NodeHarness, query = "") =>
  Effect.map(socket(node, `/agents/log${query}`), (reply) => (reply.json as { entries: Array<LogEntry> }).entries)

/** A request sent from inside a node, past its local checks: what a hand-made request looks like to the peer. */
const byHand = (
  node: NodeHarness.NodeHarness,
  peer: string,
  token: string,
  claimed: AgentScope.Scope,
  body: unknown,
): Effect.Effect<Reply> =>
  Effect.gen(function* () {
    const phase = yield* node.lifecycle.phase
    if (phase._tag !== "Member") return yield* Effect.dieMessage("not a member")
    const proxy = Context.get(phase.context, PeerProxy)
    const response = yield* proxy
      .fetch(peer, "mcp", "demo", "", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify(body),
        agent: { scope: claimed, token: Redacted.make(token) },
      })
      .pipe(Effect.orDie)
    const text = yield* Effect.promise(() => response.text())
    let json: unknown
    try {
      json = JSON.parse(text.replace(/^(event: message\n)?data: /, ""))
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json }
  })

const WIDE: AgentScope.Scope = {
  agent: "ide",
  services: [],
  tools: ["mcp://demo/*"],
  models: [],
  methods: [],
  paths: [],
  labels: {},
  expiresAtMs: Number.MAX_SAFE_INTEGER,
}

const call = (tool: string, text: string) => ({
  jsonrpc: "2.0",
  id: 7,
  method: "tools/call",
  params: { name: tool, arguments: { text } },
})

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("Agents as principals", (it) => {
  describe("a token scoped to mcp://demo/word_count", () => {
    it.scoped("is written 0600 from agents: in the configuration", () =>
      Effect.gen(function* () {
        const { a } = yield* Mesh
        yield* tokenOf(a)
        expect(statSync(join(a.dataDir, "agents", "ide.token")).mode & 0o777).toBe(0o600)
      }),
    )

    it.scoped("through the proxy: tools/list holds only word_count; sha256 is refused locally, nothing sent", () =>
      Effect.gen(function* () {
        const { a, b, bId } = yield* Mesh
        const token = yield* tokenOf(a)
        const mcp = yield* client(`${a.url}/mesh/${bId}/mcp/demo`, token)
        const tools = yield* Effect.promise(() => mcp.listTools())
        expect(tools.tools.map((t) => t.name)).toEqual(["word_count"])
        const counted = (yield* Effect.promise(() =>
          mcp.callTool({ name: "word_count", arguments: { text: `${ARGUMENT} two` } }),
        )) as CallToolResult
        expect(textOf(counted)).toContain("2 words")
        const servedBefore = (yield* logOf(b, "?agent=ide")).length
        const refused = yield* Effect.promise(() =>
          mcp.callTool({ name: "sha256", arguments: { text: FORBIDDEN_ARGUMENT } }).then(
            () => "no error",
            (error: unknown) => String(error),
          ),
        )
        expect(refused).toContain("scope.tools")
        expect(refused).toContain("mcp://demo/sha256")
        // B logs every request of the agent it served; the refused one never reached it.
        expect((yield* logOf(b, "?agent=ide")).length).toBe(servedBefore)
      }),
    )

    it.scoped("call_remote_tool: word_count answers, sha256 is a tool error naming the scope rule", () =>
      Effect.gen(function* () {
        const { a, b, bId } = yield* Mesh
        const token = yield* tokenOf(a)
        const mcp = yield* client(`${a.url}/mcp`, token)
        const ok = (yield* Effect.promise(() =>
          mcp.callTool({
            name: "call_remote_tool",
            arguments: { peer_id: bId, tool_name: "mcp://demo/word_count", arguments: { text: ARGUMENT } },
          }),
        )) as CallToolResult
        expect(ok.isError).not.toBe(true)
        expect(textOf(ok)).toContain("1 word")
        const servedBefore = (yield* logOf(b, "?agent=ide")).length
        const refused = (yield* Effect.promise(() =>
          mcp.callTool({
            name: "call_remote_tool",
            arguments: { peer_id: bId, tool_name: "mcp://demo/sha256", arguments: { text: FORBIDDEN_ARGUMENT } },
          }),
        )) as CallToolResult
        expect(refused.isError).toBe(true)
        expect(textOf(refused)).toContain("denied by scope rule scope.tools")
        expect((yield* logOf(b, "?agent=ide")).length).toBe(servedBefore)
        const found = (yield* Effect.promise(() =>
          mcp.callTool({ name: "find_remote_tools", arguments: { peer_id: bId } }),
        )) as CallToolResult
        const names = (found.structuredContent as { tools: Array<{ tool_name?: string }> }).tools.map(
          (t) => t.tool_name,
        )
        expect(names).toEqual(["mcp://demo/word_count"])
      }),
    )

    it.scoped("sent by hand past the local check, the serving peer refuses sha256 too", () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const token = yield* tokenOf(a)
        const reply = yield* byHand(a, bId, token, WIDE, call("sha256", FORBIDDEN_ARGUMENT))
        const error = (reply.json as { error?: { message: string; data?: { rule?: string } } }).error
        expect(error?.data?.rule).toBe("scope.tools")
        expect(error?.message).toContain("agent ide's scope does not list the tool mcp://demo/sha256")
        const allowed = yield* byHand(a, bId, token, WIDE, call("word_count", "fine"))
        expect(allowed.text).toContain("1 word")
      }),
    )
  })

  describe("refused tokens", () => {
    it.scoped("the same token through another node: refused by that node, and by the serving peer", () =>
      Effect.gen(function* () {
        const { a, c, bId } = yield* Mesh
        const token = yield* tokenOf(a)
        const local = yield* tcp(c, `/mesh/${bId}/a2a/echo/`, { headers: bearer(token) })
        expect(local.status).toBe(403)
        expect(local.text).toContain("minted by another node")
        const served = yield* byHand(c, bId, token, WIDE, call("word_count", "x"))
        expect(served.status).toBe(403)
        expect(served.text).toContain("names another node than the calling peer")
      }),
    )

    it.scoped("an altered token, one with its agent block removed and an expired one are refused", () =>
      Effect.gen(function* () {
        const { a, bId } = yield* Mesh
        const token = yield* tokenOf(a)
        const path = `/mesh/${bId}/a2a/echo/`
        const flip = (t: string, at: number) => t.slice(0, at) + (t[at] === "A" ? "B" : "A") + t.slice(at + 1)
        for (const at of [40, Math.floor(token.length / 2), token.length - 30]) {
          const altered = yield* tcp(a, path, { headers: bearer(flip(token, at)) })
          expect(altered.status).toBe(403)
        }
        const phase = yield* a.lifecycle.phase
        if (phase._tag !== "Member") return yield* Effect.dieMessage("not a member")
        const own = yield* Context.get(phase.context, Membership).credential
        const credential = Buffer.from(own).toString("base64")
        const bare = yield* tcp(a, path, { headers: bearer(credential) })
        expect(bare.status).toBe(403)
        expect(bare.text).toContain("no agent block")
        const minted = yield* mint(a, { agent: "brief", services: ["a2a://echo"], ttl: "2s" })
        expect(minted.status).toBe(200)
        const short = (minted.json as { token: string }).token
        expect((yield* tcp(a, path, { headers: bearer(short) })).status).toBe(200)
        // Expiries are whole seconds, cut down: a 2 s token lasts 1 to 2 s.
        yield* Effect.sleep(Duration.millis(2100))
        const expired = yield* tcp(a, path, { headers: bearer(short) })
        expect(expired.status).toBe(403)
        expect(expired.text).toContain("expired")
        const late = yield* byHand(a, bId, short, WIDE, call("word_count", "x"))
        expect(late.status).toBe(403)
      }),
    )

    it.scoped("on the socket, a long Authorization that is no agent token is the client's own and left alone", () =>
      Effect.gen(function* () {
        const { a } = yield* Mesh
        const foreign = `sk-${"x".repeat(240)}`
        expect((yield* socket(a, "/v1/models", { headers: { authorization: `Bearer ${foreign}` } })).status).toBe(200)
        const explicit = yield* socket(a, "/v1/models", { headers: bearer(foreign) })
        expect(explicit.status).toBe(403)
        expect(explicit.text).toContain("agent token refused")
      }),
    )

    it.scoped("an agent token reaches no operator route", () =>
      Effect.gen(function* () {
        const { a } = yield* Mesh
        const token = yield* tokenOf(a)
        expect((yield* tcp(a, "/debug/token-info", { headers: bearer(token) })).status).toBe(403)
        expect((yield* socket(a, "/agents/log", { headers: bearer(token) })).status).toBe(403)
      }),
    )
  })

  it.scoped("a session of the node's MCP server is its agent's: the node's own token does not find it", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const token = yield* tokenOf(a)
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
      const opened = yield* tcp(a, "/mcp", {
        method: "POST",
        headers: { ...headers, ...bearer(token) },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      })
      const session = opened.headers.get("mcp-session-id") ?? ""
      expect(session.length).toBeGreaterThan(0)
      const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }
      const as = (auth: string) =>
        tcp(a, "/mcp", {
          method: "POST",
          headers: { ...headers, ...bearer(auth), "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
          body: JSON.stringify(list),
        })
      expect((yield* as(a.apiToken)).status).toBe(404)
      expect((yield* as(token)).status).toBe(200)
    }),
  )

  it.scoped("X-Mesh-Agent reaching the backend is the token's agent id, whatever the client sent", () =>
    Effect.gen(function* () {
      const { a, bId, agentsSeen } = yield* Mesh
      const token = yield* tokenOf(a)
      const path = `/mesh/${bId}/a2a/echo/`
      const before = agentsSeen.length
      const asAgent = yield* tcp(a, path, {
        method: "POST",
        headers: { ...bearer(token), "x-mesh-agent": "root", "content-type": "text/plain" },
        body: BODY,
      })
      expect(asAgent.status).toBe(200)
      const asNode = yield* tcp(a, path, { headers: { ...bearer(a.apiToken), "x-mesh-agent": "root" } })
      expect(asNode.status).toBe(200)
      expect(agentsSeen.slice(before)).toEqual(["ide", "-"])
      // Out of scope: another service on the same peer is refused before anything is sent.
      const other = yield* tcp(a, `/mesh/${bId}/a2a/other/`, { headers: bearer(token) })
      expect(other.status).toBe(403)
      expect((other.json as { message: string }).message).toContain("denied by scope rule scope.services")
      expect(agentsSeen.length).toBe(before + 2)
    }),
  )

  it.scoped("/v1 with the openai package: models in scope only; another model is 403 naming scope.models", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const openai = (apiKey: string) => new OpenAI({ baseURL: `${a.url}/v1`, apiKey, maxRetries: 0 })
      const ids = (apiKey: string) =>
        Effect.promise(() => openai(apiKey).models.list()).pipe(Effect.map((page) => page.data.map((m) => m.id)))
      yield* eventually(60, ids(a.apiToken), (list) => list.includes(DemoInference.MODEL))
      const minted = yield* mint(a, { agent: "chat", models: ["mesh-*"], ttl: "10m" })
      const chat = (minted.json as { token: string }).token
      expect(yield* ids(chat)).toEqual([DemoInference.MODEL])
      expect(yield* ids(yield* tokenOf(a))).toEqual([])
      const answer = yield* Effect.promise(() =>
        openai(chat).chat.completions.create({
          model: DemoInference.MODEL,
          messages: [{ role: "user", content: PROMPT }],
        }),
      )
      expect(answer.choices[0]?.message.content).toContain(PROMPT)
      const refused = yield* Effect.promise(() =>
        openai(chat)
          .chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: PROMPT }] })
          .then(
            () => undefined,
            (error: unknown) => error,
          ),
      )
      expect(refused).toBeInstanceOf(PermissionDeniedError)
      expect((refused as PermissionDeniedError).message).toContain("denied by scope rule scope.models")
      // In scope, but nobody serves it: logged as an error.
      const missing = yield* Effect.promise(() =>
        openai(chat)
          .chat.completions.create({ model: "mesh-missing", messages: [{ role: "user", content: PROMPT }] })
          .then(
            () => 200,
            (error: { status?: number }) => error.status,
          ),
      )
      expect(missing).toBe(404)
      const log = yield* logOf(a, "?agent=chat")
      expect(log.map((e) => [e.target, e.outcome, e.rule])).toEqual([
        [DemoInference.MODEL, "allowed", ""],
        ["gpt-4o", "denied", "scope.models"],
        ["mesh-missing", "error", "http_404"],
      ])
    }),
  )

  it.scoped("the call log: one line per call with its outcome, matching the metric, and no argument anywhere", () =>
    Effect.gen(function* () {
      const { a, b, traces } = yield* Mesh
      const entries = (yield* logOf(a, "?agent=ide")).filter((e) => e.side === "local")
      expect(entries.length).toBeGreaterThan(0)
      const count = (outcome: string) => entries.filter((e) => e.outcome === outcome).length
      expect(count("denied")).toBeGreaterThanOrEqual(3)
      expect(count("allowed")).toBeGreaterThanOrEqual(3)
      expect(entries.filter((e) => e.outcome === "denied").map((e) => e.rule)).toContain("scope.tools")
      const metrics = (yield* tcp(a, "/metrics")).text
      for (const outcome of ["allowed", "denied", "error"]) {
        const line = metrics
          .split("\n")
          .find((l) => l.startsWith(`mesh_node_agent_calls_total{agent="ide",outcome="${outcome}"}`))
        expect({ outcome, value: Number(line?.split(" ").at(-1) ?? 0) }).toEqual({ outcome, value: count(outcome) })
      }
      // The other agent (minted from the CLI route, not configured) counts as "other".
      expect(metrics).not.toContain('agent="brief"')
      const served = yield* logOf(b, "?agent=ide")
      expect(served.some((e) => e.side === "serving" && e.outcome === "allowed")).toBe(true)
      const since = yield* logOf(a, `?agent=ide&since=${Date.now() + 60_000}`)
      expect(since).toEqual([])
      // Nothing the agent sent is kept: not in either node's log files, metrics, or any exported trace.
      yield* Effect.sleep(Duration.millis(500))
      const files = [a, b].flatMap((node) =>
        readdirSync(join(node.dataDir, "agents"))
          .filter((f) => f.startsWith("calls.log"))
          .map((f) => readFileSync(join(node.dataDir, "agents", f), "utf8")),
      )
      const everything = [...files, metrics, (yield* tcp(b, "/metrics")).text, ...traces].join("\n")
      expect(traces.length).toBeGreaterThan(0)
      for (const secret of [ARGUMENT, FORBIDDEN_ARGUMENT, BODY, PROMPT]) expect(everything).not.toContain(secret)
    }),
  )

  it.scoped("with the control plane stopped, tokens are minted and verified on both sides", () =>
    Effect.gen(function* () {
      const { a, bId, stopControlPlane } = yield* Mesh
      yield* stopControlPlane
      const minted = yield* mint(a, { agent: "offline", tools: ["mcp://demo/word_count"], ttl: "10m" })
      expect(minted.status).toBe(200)
      const token = (minted.json as { token: string }).token
      const mcp = yield* client(`${a.url}/mesh/${bId}/mcp/demo`, token)
      const counted = (yield* Effect.promise(() =>
        mcp.callTool({ name: "word_count", arguments: { text: "still working" } }),
      )) as CallToolResult
      expect(textOf(counted)).toContain("2 words")
      const refused = yield* byHand(a, bId, token, { ...WIDE, agent: "offline" }, call("sha256", "x"))
      expect((refused.json as { error?: { data?: { rule?: string } } }).error?.data?.rule).toBe("scope.tools")
      expect(Option.isSome(Option.some(refused))).toBe(true)
    }),
  )
})

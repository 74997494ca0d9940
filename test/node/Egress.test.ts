/**
 * The operator's egress floor (`egress.require_labels`) met and not met, on every way out of a node: the proxy,
 * `call_remote_tool` and `/v1`. B (zone=eu, tier=gold) publishes an MCP server and an inference provider; A1 asks for
 * zone=eu, A2 for zone=eu and tier=gold, A3 for zone=eu and tier=silver (one pair B lacks). Also a provider addressed
 * directly on its proxy path with the stock OpenAI SDK.
 */
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Context, Duration, Effect, Layer } from "effect"
import OpenAI, { NotFoundError } from "openai"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { type OpenAiBackend, openAi, USAGE } from "../support/openai.js"
import { eventually, tcp, tokenHeader } from "./support.js"

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

class Mesh extends Context.Tag("test/EgressMesh")<
  Mesh,
  {
    readonly met: NodeHarness.NodeHarness
    readonly both: NodeHarness.NodeHarness
    readonly unmet: NodeHarness.NodeHarness
    readonly bId: string
    readonly provider: OpenAiBackend
  }
>() {}

const floor = (require_labels: Record<string, string>) => ({
  file: { labels: {}, egress: { require_labels }, services: [] },
})

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const tools = yield* Backends.statefulMcp()
    const provider = yield* openAi({ name: "gold", models: ["gold-model"] })
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: { zone: "eu", tier: "gold" },
        egress: { require_labels: {} },
        services: [
          { name: "tools", type: "mcp", description: "", target_url: `${tools.url}/mcp`, env: {} },
          { name: "llm", type: "inference", description: "", target_url: provider.url, env: {} },
        ],
      },
    })
    const met = yield* NodeHarness.make(cp, floor({ zone: "eu" }))
    const both = yield* NodeHarness.make(cp, floor({ zone: "eu", tier: "gold" }))
    const unmet = yield* NodeHarness.make(cp, floor({ zone: "eu", tier: "silver" }))
    yield* Effect.all([b.connected, met.connected, both.connected, unmet.connected], { concurrency: "unbounded" })
    // Every asking node sees B's provider before a test runs (publication takes a moment).
    yield* Effect.forEach([met, both, unmet], (node) =>
      eventually(
        60,
        Effect.map(tcp(node, "/mesh/service/discover?type=inference&timeout=5s"), (r) => r.json),
        (rows) => Array.isArray(rows) && rows.length === 1,
      ),
    )
    return { met, both, unmet, bId: yield* b.peerId, provider }
  }),
)

const agent = (node: NodeHarness.NodeHarness) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "egress-test", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), { requestInit: { headers: tokenHeader(node) } }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const callEcho = (node: NodeHarness.NodeHarness, bId: string) =>
  Effect.flatMap(agent(node), (client) =>
    Effect.promise(
      () =>
        client.callTool({
          name: "call_remote_tool",
          arguments: { peer_id: bId, tool_name: "mcp://tools/echo", arguments: { text: "over the floor" } },
        }) as Promise<CallToolResult>,
    ),
  ).pipe(Effect.scoped)

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

const chat = (node: NodeHarness.NodeHarness) =>
  Effect.promise(() =>
    new OpenAI({ baseURL: `${node.url}/v1`, apiKey: node.apiToken, maxRetries: 0 }).chat.completions
      .create({ model: "gold-model", messages: [{ role: "user", content: "hi" }] })
      .then(
        (data) => ({ data, error: undefined }),
        (error: unknown) => ({ data: undefined, error }),
      ),
  )

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })("the egress floor", (it) => {
  it.effect("a floor B attests, one pair or two, lets the proxy, call_remote_tool and /v1 through", () =>
    Effect.gen(function* () {
      const { met, both, bId } = yield* Mesh
      for (const node of [met, both]) {
        const proxied = yield* tcp(node, `/mesh/${bId}/inference/llm/v1/models`)
        expect(proxied.status).toBe(200)
        expect((proxied.json as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual(["gold-model"])
        const called = yield* callEcho(node, bId)
        expect(called.isError, textOf(called)).toBeUndefined()
        expect(called.content).toEqual([{ type: "text", text: "over the floor" }])
        const answered = yield* chat(node)
        expect(answered.error).toBeUndefined()
        expect(answered.data?.choices[0]?.message.content).toBe("Hello from gold")
      }
    }),
  )

  it.effect(
    "a floor with one pair B lacks refuses the proxy and call_remote_tool naming it, and /v1 never routes to B",
    () =>
      Effect.gen(function* () {
        const { unmet, bId, provider } = yield* Mesh
        const before = provider.count("gold-model")
        const proxied = yield* tcp(unmet, `/mesh/${bId}/inference/llm/v1/models`)
        expect(proxied.status).toBe(403)
        expect((proxied.json as { message: string }).message).toContain("egress.require_labels: lacks tier=silver")
        const called = yield* callEcho(unmet, bId)
        expect(called.isError).toBe(true)
        expect(textOf(called)).toContain("egress.require_labels")
        // /v1 learns a peer's models from the peer itself, through the same floor: B's are not there to be routed to.
        const models = yield* Effect.promise(() =>
          new OpenAI({ baseURL: `${unmet.url}/v1`, apiKey: unmet.apiToken, maxRetries: 0 }).models.list(),
        )
        expect(models.data.map((m) => m.id)).not.toContain("gold-model")
        const refused = (yield* chat(unmet)).error
        expect(refused).toBeInstanceOf(NotFoundError)
        expect((refused as NotFoundError).code).toBe("model_not_found")
        // Refused before B was asked.
        expect(provider.count("gold-model")).toBe(before)
      }),
  )

  it.effect("the stock OpenAI SDK on a provider's proxy path: the backend's key passes, the API token does not", () =>
    Effect.gen(function* () {
      const { met, bId, provider } = yield* Mesh
      const direct = new OpenAI({
        baseURL: `${met.url}/mesh/${bId}/inference/llm/v1`,
        apiKey: "provider-key",
        defaultHeaders: tokenHeader(met),
        maxRetries: 0,
      })
      const seen = provider.requests.length
      const models = yield* Effect.promise(() => direct.models.list())
      expect(models.data.map((m) => m.id)).toEqual(["gold-model"])
      const completion = yield* Effect.promise(() =>
        direct.chat.completions.create({ model: "gold-model", messages: [{ role: "user", content: "hi" }] }),
      )
      expect(completion.choices[0]?.message.content).toBe("Hello from gold")
      expect(completion.usage).toMatchObject(USAGE)
      let streamed = ""
      const stream = yield* Effect.promise(() =>
        direct.chat.completions.create({
          model: "gold-model",
          messages: [{ role: "user", content: "hi" }],
          stream: true,
        }),
      )
      yield* Effect.promise(async () => {
        for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? ""
      })
      expect(streamed).toBe("Hello from gold")
      const received = provider.requests.slice(seen)
      expect(received.map((r) => `${r.method} ${r.url}`)).toEqual([
        "GET /v1/models",
        "POST /v1/chat/completions",
        "POST /v1/chat/completions",
      ])
      for (const request of received) {
        expect(request.headers.authorization).toBe("Bearer provider-key")
        expect(JSON.stringify(request.headers)).not.toContain(met.apiToken)
      }
    }),
  )
})

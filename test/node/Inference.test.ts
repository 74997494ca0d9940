/**
 * Inference through the node's `/v1` routes, end to end, with the stock OpenAI SDK: a control plane, a router and
 * two nodes in this process over loopback (real libp2p, real HTTP, real time). Node A (zone=eu) publishes provider
 * "alpha", node B (zone=us) provider "beta", each a small OpenAI-compatible server. Some models are served by both:
 * `shared` (alpha answers 503), `doomed` (alpha 503, beta 502), `labelled` (both fine).
 */
import { request as httpRequest } from "node:http"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import OpenAI, { type APIError, InternalServerError, NotFoundError, PermissionDeniedError } from "openai"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { admin, setPolicy } from "../support/admin.js"
import { seriesValue } from "../support/metrics.js"
import { type OpenAiBackend, openAi, USAGE } from "../support/openai.js"
import { eventually, tcp } from "./support.js"

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["inference://*"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

const provider = (name: string, url: string) => ({
  name,
  type: "inference" as const,
  description: "",
  target_url: url,
  env: {},
})

class Mesh extends Context.Tag("test/InferenceMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly b: NodeHarness.NodeHarness
    readonly aId: string
    readonly bId: string
    readonly alpha: OpenAiBackend
    readonly beta: OpenAiBackend
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const alpha = yield* openAi({
      name: "alpha",
      models: ["model-a", "shared", "doomed", "labelled", "hold-a"],
      failing: { shared: 503, doomed: 503 },
      holding: ["hold-a"],
    })
    const beta = yield* openAi({
      name: "beta",
      models: ["model-b", "shared", "doomed", "labelled", "hold-b"],
      failing: { doomed: 502 },
      holding: ["hold-b"],
    })
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const a = yield* NodeHarness.make(cp, {
      file: { labels: { zone: "eu" }, egress: { require_labels: {} }, services: [provider("alpha", alpha.url)] },
    })
    const b = yield* NodeHarness.make(cp, {
      file: { labels: { zone: "us" }, egress: { require_labels: {} }, services: [provider("beta", beta.url)] },
    })
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    const mesh = { a, b, aId: yield* a.peerId, bId: yield* b.peerId, alpha, beta }
    // Each node can discover the other's provider before any test runs (publication takes a moment): the model
    // list, with models of the node's own in it, keeps even a view without the other's for 30 s.
    yield* Effect.forEach([a, b], (node) =>
      eventually(
        30,
        tcp(node, "/mesh/service/discover?type=inference&timeout=5s").pipe(
          Effect.map((reply) => (reply.json as ReadonlyArray<{ srv_name: string }>).map((row) => row.srv_name)),
        ),
        (names) => names.length === 1,
      ),
    )
    return mesh
  }),
)

/** The stock SDK pointed at a node, its API token as the key; no retries, so every answer is the node's. */
const client = (node: NodeHarness.NodeHarness, options: { readonly apiKey?: string } = {}) =>
  new OpenAI({ baseURL: `${node.url}/v1`, apiKey: options.apiKey ?? node.apiToken, maxRetries: 0 })

const chat = (node: NodeHarness.NodeHarness, model: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    client(node)
      .chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }, { headers })
      .withResponse(),
  )

/** The SDK's error for a call expected to fail. */
const failure = (call: () => Promise<unknown>) =>
  Effect.promise(() =>
    call().then(
      () => undefined,
      (error: unknown) => error,
    ),
  )

interface Raw {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly json: unknown
}

/** One request with exactly these headers and body. */
const rawRequest = (
  node: NodeHarness.NodeHarness,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
) =>
  Effect.async<Raw>((resume) => {
    const req = httpRequest(`${node.url}${path}`, { method, headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString()
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = text
        }
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, json }))
      })
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(body)
  })

const bearer = (node: NodeHarness.NodeHarness) => ({ authorization: `Bearer ${node.apiToken}` })

const metricsOf = (node: NodeHarness.NodeHarness) =>
  Effect.promise(() => fetch(`${node.url}/metrics`, { headers: bearer(node) }).then((r) => r.text()))

/** A counter not yet incremented is absent from the scrape: 0. */
const value = (metrics: string, series: string): number => seriesValue(metrics, series) ?? 0

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(2) })("inference through /v1", (it) => {
  it.effect("models.list() on either node shows both providers' models, each owned by its serving peer", () =>
    Effect.gen(function* () {
      const { a, b, aId, bId } = yield* Mesh
      for (const node of [a, b]) {
        const models = (yield* Effect.promise(() => client(node).models.list())).data
        const byId = new Map(models.map((m) => [m.id, m]))
        expect(byId.get("model-a")?.owned_by).toBe(aId)
        expect(byId.get("model-b")?.owned_by).toBe(bId)
        expect(byId.get("model-a")?.object).toBe("model")
        // One entry per model, sorted; a model both serve belongs to the node asked (its own provider first).
        const ids = models.map((m) => m.id)
        expect(ids).toEqual([...ids].sort())
        expect(new Set(ids).size).toBe(ids.length)
        expect(byId.get("labelled")?.owned_by).toBe(node === a ? aId : bId)
      }
    }),
  )

  it.effect("chat completions, whole, reach the local and the remote provider; each answer names its provider", () =>
    Effect.gen(function* () {
      const { a, b, aId, bId } = yield* Mesh
      for (const [node, model, expected, provider] of [
        [a, "model-a", "Hello from alpha", aId],
        [a, "model-b", "Hello from beta", bId],
        [b, "model-a", "Hello from alpha", aId],
        [b, "model-b", "Hello from beta", bId],
      ] as const) {
        const { data, response } = yield* chat(node, model)
        expect(data.choices[0]?.message.content).toBe(expected)
        expect(data.usage).toMatchObject(USAGE)
        expect(response.headers.get("x-mesh-provider")).toBe(provider)
        // A number of milliseconds: a missing header must fail here, not read as Number(null), 0.
        expect(response.headers.get("x-mesh-overhead-ms")).toMatch(/^\d+(\.\d+)?$/)
      }
      // The legacy completions route too.
      const legacy = yield* Effect.promise(() => client(a).completions.create({ model: "model-b", prompt: "hi" }))
      expect(legacy.choices[0]?.text).toBe("Hello from beta")
    }),
  )

  it.effect("streamed completions pass each chunk on as the provider sends it, local and remote", () =>
    Effect.gen(function* () {
      const { a, aId, bId, alpha, beta } = yield* Mesh
      for (const [model, backend, name, provider] of [
        ["model-a", alpha, "alpha", aId],
        ["model-b", beta, "beta", bId],
      ] as const) {
        const completion = `mesh_node_inference_tokens_total{model="${model}",provider="${provider}",type="completion"}`
        const countedBefore = value(yield* metricsOf(a), completion)
        // The provider sends each chunk after the first only once the client has received the one before: a node
        // that held chunks back would never see this stream end.
        backend.gated = true
        let chunks = 0
        let text = ""
        const stream = yield* Effect.promise(() =>
          client(a).chat.completions.create({
            model,
            messages: [{ role: "user", content: "hi" }],
            stream: true,
            stream_options: { include_usage: true },
          }),
        )
        yield* Effect.promise(async () => {
          for await (const chunk of stream) {
            chunks += 1
            text += chunk.choices[0]?.delta.content ?? ""
            backend.advance()
          }
        }).pipe(Effect.timeout(Duration.seconds(20)))
        backend.gated = false
        expect(text).toBe(`Hello from ${name}`)
        // Four content chunks and the usage chunk.
        expect(chunks).toBe(5)
        // The usage the stream's last chunk carried was counted, by this request's own series.
        expect(value(yield* metricsOf(a), completion) - countedBefore).toBe(USAGE.completion_tokens)
      }
    }),
  )

  it.effect("a model no provider lists is the SDK's NotFoundError, code model_not_found", () =>
    Effect.gen(function* () {
      const { a, aId } = yield* Mesh
      const error = yield* failure(() =>
        client(a).chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }),
      )
      expect(error).toBeInstanceOf(NotFoundError)
      expect((error as NotFoundError).code).toBe("model_not_found")
      expect((error as NotFoundError).type).toBe("invalid_request_error")
      expect((error as NotFoundError).headers?.get("x-mesh-provider")).toBe(aId)
      // The unknown name is not a metric label.
      expect(yield* metricsOf(a)).not.toContain("no-such-model")
    }),
  )

  it.effect("a provider answering 503 is passed over for the next, and skipped while it cools down", () =>
    Effect.gen(function* () {
      const { a, bId, alpha, beta } = yield* Mesh
      const before = { alpha: alpha.count("shared"), beta: beta.count("shared") }
      for (let i = 0; i < 4; i++) {
        const { data, response } = yield* chat(a, "shared")
        expect(data.choices[0]?.message.content).toBe("Hello from beta")
        expect(response.headers.get("x-mesh-provider")).toBe(bId)
      }
      // alpha (local, so first in rank) was tried once; then its cooldown kept it out.
      expect(alpha.count("shared") - before.alpha).toBe(1)
      expect(beta.count("shared") - before.beta).toBe(4)
      const metrics = yield* metricsOf(a)
      expect(
        value(
          metrics,
          `mesh_node_inference_fallbacks_total{model="shared",provider="${yield* a.peerId}",reason="status_503"}`,
        ),
      ).toBe(1)
    }),
  )

  it.effect("every provider failing is 503 with a body naming each failure", () =>
    Effect.gen(function* () {
      const { a, alpha, beta } = yield* Mesh
      const before = { alpha: alpha.count("doomed"), beta: beta.count("doomed") }
      const body = JSON.stringify({ model: "doomed", messages: [{ role: "user", content: "hi" }] })
      const answer = yield* rawRequest(
        a,
        "POST",
        "/v1/chat/completions",
        { ...bearer(a), "content-type": "application/json" },
        body,
      )
      expect(answer.status).toBe(503)
      const error = (answer.json as { error: { code: string; message: string; type: string } }).error
      expect(error.code).toBe("no_available_provider")
      expect(error.type).toBe("server_error")
      expect(error.message).toContain("answered 503")
      expect(error.message).toContain("answered 502")
      expect(Number(answer.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      expect(alpha.count("doomed") - before.alpha).toBe(1)
      expect(beta.count("doomed") - before.beta).toBe(1)
      // Both cooling down now: refused without asking either, and the SDK sees a server error.
      const again = yield* failure(() =>
        client(a).chat.completions.create({ model: "doomed", messages: [{ role: "user", content: "hi" }] }),
      )
      expect(again).toBeInstanceOf(InternalServerError)
      expect((again as APIError).status).toBe(503)
      expect(alpha.count("doomed") - before.alpha).toBe(1)
      expect(beta.count("doomed") - before.beta).toBe(1)
    }),
  )

  it.effect("required labels: a provider not attesting them is not used; none eligible is 403", () =>
    Effect.gen(function* () {
      const { a, aId, bId, alpha } = yield* Mesh
      const before = alpha.count("labelled")
      // alpha is local to A and would come first, but A is zone=eu.
      const us = yield* chat(a, "labelled", { "x-mesh-required-labels": "zone=us" })
      expect(us.response.headers.get("x-mesh-provider")).toBe(bId)
      expect(alpha.count("labelled")).toBe(before)
      // One attested pair is enough.
      const either = yield* chat(a, "labelled", { "x-mesh-required-labels": "zone=eu,tier=gold" })
      expect(either.response.headers.get("x-mesh-provider")).toBe(aId)
      // model-b is served by B only, which is not zone=eu.
      const refused = yield* failure(() =>
        client(a).chat.completions.create(
          { model: "model-b", messages: [{ role: "user", content: "hi" }] },
          { headers: { "x-mesh-required-labels": "zone=eu" } },
        ),
      )
      expect(refused).toBeInstanceOf(PermissionDeniedError)
      expect((refused as PermissionDeniedError).code).toBe("no_eligible_provider")
      const bad = yield* failure(() =>
        client(a).chat.completions.create(
          { model: "model-b", messages: [{ role: "user", content: "hi" }] },
          { headers: { "x-mesh-required-labels": "zone" } },
        ),
      )
      expect((bad as APIError).status).toBe(400)
    }),
  )

  it.effect("a client leaving mid-stream closes the provider's request, local and remote", () =>
    Effect.gen(function* () {
      const { a, alpha, beta } = yield* Mesh
      for (const [model, backend] of [
        ["hold-a", alpha],
        ["hold-b", beta],
      ] as const) {
        const before = backend.heldClosedAt.length
        const controller = new AbortController()
        // The provider holds the stream for as long as its client stays: open while ours reads, closed once it left.
        const openWhileReading = yield* Effect.promise(async () => {
          const stream = await client(a).chat.completions.create(
            { model, messages: [{ role: "user", content: "hi" }], stream: true },
            { signal: controller.signal },
          )
          let open = -1
          for await (const _ of stream) {
            open = backend.heldClosedAt.length
            break
          }
          controller.abort()
          return open
        })
        expect(openWhileReading).toBe(before)
        yield* eventually(
          10,
          Effect.sync(() => backend.heldClosedAt.length),
          (closed) => closed === before + 1,
        )
      }
    }),
  )

  it.effect("bad requests are refused in OpenAI's error shape: bad JSON, no model, too large, wrong method", () =>
    Effect.gen(function* () {
      const { a } = yield* Mesh
      const json = { ...bearer(a), "content-type": "application/json" }
      const badJson = yield* rawRequest(a, "POST", "/v1/chat/completions", json, "{not json")
      expect(badJson.status).toBe(400)
      expect(badJson.json).toEqual({
        error: {
          message: "the request body is not valid JSON",
          type: "invalid_request_error",
          param: null,
          code: "bad_request",
        },
      })
      const noModel = yield* rawRequest(a, "POST", "/v1/completions", json, '{"prompt":"hi"}')
      expect(noModel.status).toBe(400)
      expect((noModel.json as { error: { message: string } }).error.message).toContain("model")
      const huge = yield* rawRequest(a, "POST", "/v1/chat/completions", {
        ...json,
        "content-length": String(17 * 1024 * 1024),
      })
      expect(huge.status).toBe(413)
      expect((huge.json as { error: { code: string } }).error.code).toBe("payload_too_large")
      const wrongMethod = yield* rawRequest(a, "GET", "/v1/chat/completions", bearer(a))
      expect(wrongMethod.status).toBe(405)
      expect((wrongMethod.json as { error: { type: string } }).error.type).toBe("invalid_request_error")
      // A wrong key is refused before routing, in the same shape, so the SDK reports it as it would OpenAI's.
      const wrongKey = yield* failure(() => client(a, { apiKey: "mesh-api-not-the-token-at-all" }).models.list())
      expect(wrongKey).toBeInstanceOf(PermissionDeniedError)
      expect((wrongKey as PermissionDeniedError).code).toBe("forbidden")
    }),
  )

  it.effect("metrics count requests, latency and tokens by model and provider", () =>
    Effect.gen(function* () {
      const { a, bId } = yield* Mesh
      // Each series is read before and after this test's own requests: earlier tests' counts prove nothing here.
      const requests = `mesh_node_inference_requests_total{code="200",model="model-b",provider="${bId}"}`
      const prompt = `mesh_node_inference_tokens_total{model="model-b",provider="${bId}",type="prompt"}`
      const duration = `mesh_node_inference_request_duration_seconds_count{model="model-b",provider="${bId}"}`
      const overhead = 'mesh_node_inference_overhead_seconds_count{locality="remote"}'
      const unknown = 'mesh_node_inference_requests_total{code="404",model="unknown",provider="none"}'
      const before = yield* metricsOf(a)
      yield* chat(a, "model-b")
      yield* failure(() =>
        client(a).chat.completions.create({ model: "not-listed", messages: [{ role: "user", content: "hi" }] }),
      )
      const after = yield* metricsOf(a)
      const delta = (series: string) => value(after, series) - value(before, series)
      expect(delta(requests)).toBe(1)
      expect(delta(prompt)).toBe(USAGE.prompt_tokens)
      expect(delta(duration)).toBe(1)
      expect(delta(overhead)).toBe(1)
      // A model no provider lists is counted, under "unknown" rather than the name the client made up.
      expect(delta(unknown)).toBe(1)
      expect(after).not.toContain("not-listed")
    }),
  )

  it.effect("the API token never reaches a provider, local or remote", () =>
    Effect.gen(function* () {
      const { a, b, alpha, beta } = yield* Mesh
      yield* chat(a, "model-a")
      yield* chat(a, "model-b")
      yield* chat(b, "model-a")
      for (const backend of [alpha, beta]) {
        expect(backend.requests.some((r) => r.url === "/v1/chat/completions")).toBe(true)
        for (const received of backend.requests) {
          expect(received.headers.authorization).toBeUndefined()
          expect(received.headers["x-mesh-authentication"]).toBeUndefined()
          const all = JSON.stringify(received.headers) + received.body
          expect(all).not.toContain(a.apiToken)
          expect(all).not.toContain(b.apiToken)
        }
      }
    }),
  )
})

describe("inference and bans", () => {
  it.live(
    "a banned provider's models leave /v1/models at once, though the model view is kept 30 s",
    () =>
      Effect.gen(function* () {
        const beta = yield* openAi({ name: "beta", models: ["model-b"] })
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
        yield* setPolicy(cp, POLICY)
        yield* RouterHarness.make(cp)
        const b = yield* NodeHarness.make(cp, {
          file: { labels: {}, egress: { require_labels: {} }, services: [provider("beta", beta.url)] },
        })
        const a = yield* NodeHarness.make(cp)
        yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
        const listed = Effect.promise(() => client(a).models.list()).pipe(
          Effect.map((page) => page.data.map((m) => m.id)),
        )
        yield* eventually(60, listed, (ids) => ids.includes("model-b"))
        expect((yield* admin(cp, "POST", "/admin/revoke", { peer_id: yield* b.peerId })).status).toBe(200)
        yield* eventually(10, listed, (ids) => !ids.includes("model-b"))
      }).pipe(Effect.scoped),
    120_000,
  )
})

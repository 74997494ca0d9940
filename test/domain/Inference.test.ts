import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Inference from "../../src/domain/Inference.js"

const bytes = (text: string) => new TextEncoder().encode(text)

const candidate = (
  peerId: string,
  service: string,
  options: Partial<Pick<Inference.Candidate, "local" | "labels" | "load">> = {},
): Inference.Candidate => ({
  peerId,
  service,
  local: options.local ?? false,
  labels: options.labels ?? {},
  load: options.load ?? 0,
})

const input = (overrides: Partial<Inference.RankInput> = {}): Inference.RankInput => ({
  model: "m",
  required: undefined,
  floor: {},
  coolingUntil: new Map(),
  nowMs: 1_000,
  turn: 0,
  ...overrides,
})

const order = (ranking: Inference.Ranking) => ranking.ordered.map((c) => `${c.peerId}/${c.service}`)

describe("Inference.parseCompletion", () => {
  it("reads model and stream, and refuses what is not a completion body", () => {
    expect(Inference.parseCompletion(bytes('{"model":"x","messages":[]}'))).toEqual(
      Either.right({ model: "x", stream: false }),
    )
    expect(Inference.parseCompletion(bytes('{"model":"x","stream":true}'))).toEqual(
      Either.right({ model: "x", stream: true }),
    )
    expect(Inference.parseCompletion(bytes('{"model":"x","stream":null}'))).toEqual(
      Either.right({ model: "x", stream: false }),
    )
    for (const body of ["{", "[]", '"x"', "null", '{"model":""}', '{"model":3}', '{"messages":[]}']) {
      expect([body, Either.isLeft(Inference.parseCompletion(bytes(body)))]).toEqual([body, true])
    }
    expect(Inference.parseCompletion(bytes('{"model":"x","stream":"yes"}'))).toEqual(
      Either.left("stream must be a boolean"),
    )
  })
})

describe("Inference.rank", () => {
  it("puts local providers first, then remote ones by load", () => {
    const ranking = Inference.rank(
      [
        candidate("p2", "s", { load: 3 }),
        candidate("p1", "s", { load: 1 }),
        candidate("self", "local", { local: true, load: 9 }),
        candidate("p3", "s", { load: 2 }),
      ],
      input(),
    )
    expect(order(ranking)).toEqual(["self/local", "p1/s", "p3/s", "p2/s"])
  })

  it("rotates the least loaded among themselves from one turn to the next, and leaves the rest in order", () => {
    const all = [candidate("a", "s"), candidate("b", "s"), candidate("c", "s"), candidate("d", "s", { load: 1 })]
    expect(order(Inference.rank(all, input({ turn: 0 })))).toEqual(["a/s", "b/s", "c/s", "d/s"])
    expect(order(Inference.rank(all, input({ turn: 1 })))).toEqual(["b/s", "c/s", "a/s", "d/s"])
    expect(order(Inference.rank(all, input({ turn: 2 })))).toEqual(["c/s", "a/s", "b/s", "d/s"])
    expect(order(Inference.rank(all, input({ turn: 3 })))).toEqual(["a/s", "b/s", "c/s", "d/s"])
  })

  it("leaves out providers attesting none of the required pairs, or not all of the floor", () => {
    const all = [
      candidate("eu", "s", { labels: { zone: "eu" } }),
      candidate("us", "s", { labels: { zone: "us", tier: "gold" } }),
      candidate("none", "s"),
    ]
    const required = Inference.rank(all, input({ required: { zone: "eu", tier: "gold" } }))
    expect(order(required)).toEqual(["eu/s", "us/s"])
    expect(required.refusedByLabels).toBe(1)
    const floor = Inference.rank(all, input({ floor: { zone: "us", tier: "gold" } }))
    expect(order(floor)).toEqual(["us/s"])
    expect(floor.refusedByLabels).toBe(2)
    expect(Inference.rank(all, input({ required: { zone: "mars" } })).ordered).toEqual([])
  })

  it("skips providers cooling down for this model until their cooldown ends, and says when the first ends", () => {
    const all = [candidate("a", "s"), candidate("b", "s"), candidate("c", "s")]
    const coolingUntil = new Map([
      [Inference.cooldownKey({ peerId: "a", service: "s" }, "m"), 5_000],
      [Inference.cooldownKey({ peerId: "b", service: "s" }, "m"), 3_000],
      [Inference.cooldownKey({ peerId: "c", service: "s" }, "other-model"), 9_000],
    ])
    const during = Inference.rank(all, input({ coolingUntil, nowMs: 2_000 }))
    expect(order(during)).toEqual(["c/s"])
    expect(during.coolingUntilMs).toBe(3_000)
    const later = Inference.rank(all, input({ coolingUntil, nowMs: 3_000 }))
    expect(order(later)).toEqual(["b/s", "c/s"])
    expect(order(Inference.rank(all, input({ coolingUntil, nowMs: 5_000 })))).toEqual(["a/s", "b/s", "c/s"])
  })
})

describe("Inference.providerHeaders", () => {
  it("drops the API token wherever it travels, the label requirement, cookies and encodings; sets the length", () => {
    const out = Inference.providerHeaders(
      {
        authorization: "Bearer secret",
        "x-mesh-authentication": "Bearer secret",
        "x-mesh-required-labels": "zone=eu",
        cookie: "a=b",
        "accept-encoding": "gzip",
        "content-length": "999",
        "transfer-encoding": "chunked",
        connection: "keep-alive",
        host: "127.0.0.1:8080",
        "content-type": "application/json",
        "x-stainless-lang": "js",
      },
      12,
    )
    expect(out).toEqual({ "content-type": "application/json", "x-stainless-lang": "js", "content-length": "12" })
  })
})

describe("Inference usage", () => {
  it("is read from a whole answer, or from the last event of a stream that carries one", () => {
    expect(Inference.usageOfJson('{"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}')).toEqual({
      promptTokens: 3,
      completionTokens: 5,
    })
    expect(Inference.usageOfJson('{"choices":[]}')).toBeUndefined()
    expect(Inference.usageOfJson("not json")).toBeUndefined()
    const events = [
      'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}',
      "",
      'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}',
      "",
      "data: [DONE]",
      "",
    ].join("\n")
    expect(Inference.usageOfEvents(events)).toEqual({ promptTokens: 4, completionTokens: 2 })
    expect(Inference.usageOfEvents('data: {"choices":[]}\n\ndata: [DONE]\n\n')).toBeUndefined()
    // A cut-off first line (the tail of a long stream) is skipped.
    expect(Inference.usageOfEvents('"usage":{"prompt_tokens":1}}\n\ndata: [DONE]')).toBeUndefined()
  })
})

describe("Inference.modelList", () => {
  it("is one entry per model, sorted, owned by this node when it serves it, else by the lowest peer id", () => {
    const list = Inference.modelList(
      [
        { id: "b", owned_by: "self" },
        { id: "shared", owned_by: "self" },
      ],
      [
        { id: "shared", owned_by: "p1" },
        { id: "a", owned_by: "p9" },
        { id: "a", owned_by: "p2" },
      ],
    )
    expect(list).toEqual([
      { id: "a", object: "model", created: 0, owned_by: "p2" },
      { id: "b", object: "model", created: 0, owned_by: "self" },
      { id: "shared", object: "model", created: 0, owned_by: "self" },
    ])
  })
})

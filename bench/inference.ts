/**
 * Inference routing, every party in a process of its own (bench/lib/meshNodes.ts: control plane, router, nodes A
 * and B as `mesh-node run`; the providers; a bench peer for the baselines, bench/lib/benchPeers.ts). Node A
 * publishes provider `local-llm` (model `local-model`), node B `remote-llm` (model `remote-model`), each an
 * OpenAI-compatible child process. Interleaved one by one, so load from elsewhere hits all alike: a small
 * non-streaming chat completion through A's `/v1/chat/completions` (over A's socket) to its own provider and to
 * B's, the same call straight to each provider, a bare stream open + 1 KiB echo to a bench peer (the goal's
 * baseline), and the remote call written as HTTP straight onto a stream to a bench peer that pipes it to B's
 * provider (what routing to a peer could cost at best); then the time to the first chunk of a streamed completion,
 * through A and straight to the provider, for both. "p99 added" is the p99 of per-pair differences (each sample
 * through the node minus the direct sample taken next to it).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Logger, LogLevel } from "effect"
import * as Local from "../test/scale/LocalApi.js"
import * as BenchPeers from "./lib/benchPeers.js"
import { goals } from "./lib/goals.js"
import * as MeshNodes from "./lib/meshNodes.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import { added, addedText, ms, percentile } from "./lib/stats.js"

const WARMUP = 150
const SAMPLES = 800
const STREAM_SAMPLES = 300

const body = (model: string, stream: boolean) =>
  Buffer.from(JSON.stringify({ model, messages: [{ role: "user", content: "Say hello." }], stream }))

/**
 * One POST over a keep-alive agent (to a node's socket when `socketPath` is set); resolves with the ms to the first
 * body byte and to the end, once the answer has been read through.
 */
const post = (
  agent: Agent,
  url: string,
  socketPath: string | undefined,
  payload: Buffer,
): Promise<{ first: number; total: number; provider: string | undefined; overhead: number }> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    let first = -1
    const req = request(
      url,
      {
        agent,
        method: "POST",
        ...(socketPath === undefined ? {} : { socketPath }),
        headers: { "content-type": "application/json", "content-length": String(payload.length) },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
        res.on("data", () => {
          if (first < 0) first = performance.now() - started
        })
        res.on("end", () => {
          const provider = res.headers["x-mesh-provider"]
          resolve({
            first,
            total: performance.now() - started,
            provider: typeof provider === "string" ? provider : undefined,
            overhead: Number(res.headers["x-mesh-overhead-ms"] ?? Number.NaN),
          })
        })
        res.on("error", reject)
      },
    )
    req.on("error", reject)
    req.end(payload)
  })

const measure = (urls: {
  readonly local: string
  readonly remote: string
  readonly remotePort: number
  /** The bare pass-through's Unix socket, in front of the local provider. */
  readonly passthrough: string
}) =>
  Effect.gen(function* () {
    const [mesh, peers] = yield* Effect.all(
      [
        MeshNodes.make({
          a: [MeshNodes.service("inference", "local-llm", urls.local)],
          b: [MeshNodes.service("inference", "remote-llm", urls.remote)],
          discover: [["inference", "remote-llm"]],
        }),
        BenchPeers.make(urls.remotePort),
      ],
      { concurrency: "unbounded" },
    )
    const a = mesh.direct
    // Both models must be known to A before measuring (publication and discovery take a moment).
    const deadline = performance.now() + 60_000
    for (;;) {
      const listed = yield* Effect.promise(() =>
        a.fetch(`${Local.BASE}/v1/models`).then((r) => r.json() as Promise<{ data?: Array<{ id: string }> }>),
      )
      const ids = listed.data?.map((m) => m.id) ?? []
      if (ids.includes("local-model") && ids.includes("remote-model")) break
      if (performance.now() > deadline) return yield* Effect.dieMessage("the models never showed up on node A")
      yield* Effect.sleep("200 millis")
    }

    const agents = {
      node: new Agent({ keepAlive: true, maxSockets: 1 }),
      direct: new Agent({ keepAlive: true, maxSockets: 1 }),
      bare: new Agent({ keepAlive: true, maxSockets: 1 }),
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => Object.values(agents).forEach((x) => x.destroy())))
    const through = `${Local.BASE}/v1/chat/completions`
    const socket = a.from.socketPath
    const calls = {
      localNode: (stream: boolean) => post(agents.node, through, socket, body("local-model", stream)),
      localDirect: (stream: boolean) =>
        post(agents.direct, `${urls.local}/v1/chat/completions`, undefined, body("local-model", stream)),
      remoteNode: (stream: boolean) => post(agents.node, through, socket, body("remote-model", stream)),
      remoteDirect: (stream: boolean) =>
        post(agents.direct, `${urls.remote}/v1/chat/completions`, undefined, body("remote-model", stream)),
    }
    const remoteBody = body("remote-model", false)
    const rounds = {
      localNode: async () => {
        const answer = await calls.localNode(false)
        if (answer.provider !== a.fromId) throw new Error("local-model was not served by node A")
        return answer
      },
      localDirect: () => calls.localDirect(false),
      localBare: () => post(agents.bare, through, urls.passthrough, body("local-model", false)),
      remoteNode: async () => {
        const answer = await calls.remoteNode(false)
        if (answer.provider !== a.toId) throw new Error("remote-model was not served by node B")
        return answer
      },
      remoteDirect: () => calls.remoteDirect(false),
      stream: async () => ({ total: await BenchPeers.echo(peers.direct), overhead: Number.NaN }),
      http: async () => ({
        total: await BenchPeers.http(peers.host, peers.direct, "/v1/chat/completions", remoteBody),
        overhead: Number.NaN,
      }),
    }
    type Kind = keyof typeof rounds
    const kinds = Object.keys(rounds) as Array<Kind>
    const samples = Object.fromEntries(kinds.map((k) => [k, [] as Array<number>])) as Record<Kind, Array<number>>
    // What the node says it added (X-Mesh-Overhead-Ms), against what the client saw.
    const reported = { localNode: [] as Array<number>, remoteNode: [] as Array<number> }
    yield* Effect.promise(async () => {
      for (let i = 0; i < WARMUP + SAMPLES; i++) {
        for (const kind of kinds) {
          const answer = await rounds[kind]()
          if (i < WARMUP) continue
          samples[kind].push(answer.total)
          if (kind === "localNode" || kind === "remoteNode") reported[kind].push(answer.overhead)
        }
      }
    })
    const ttfc = {
      localNode: [] as Array<number>,
      localDirect: [] as Array<number>,
      remoteNode: [] as Array<number>,
      remoteDirect: [] as Array<number>,
    }
    yield* Effect.promise(async () => {
      for (let i = 0; i < STREAM_SAMPLES; i++) {
        for (const kind of ["localNode", "localDirect", "remoteNode", "remoteDirect"] as const) {
          ttfc[kind].push((await calls[kind](true)).first)
        }
      }
    })
    const paths = yield* a.check("direct")
    peers.direct.check()

    const p50 = (xs: ReadonlyArray<number>) => percentile(xs, 0.5)
    const stream50 = p50(samples.stream)
    const local50 = p50(samples.localNode) - p50(samples.localDirect)
    const bare50 = p50(samples.localBare) - p50(samples.localDirect)
    const remote50 = p50(samples.remoteNode) - p50(samples.remoteDirect)
    const httpAdded = added(samples.http, samples.remoteDirect)
    const interleaved = `${SAMPLES} of each, interleaved, after ${WARMUP}`
    return [
      {
        name: "inference overhead, local provider (node p50 - direct p50)",
        figure: local50,
        unit: "ms",
        baselineName: "direct p50",
        baseline: p50(samples.localDirect),
        ratio: p50(samples.localNode) / p50(samples.localDirect),
        goal: `<= ${goals.inference.localAddedMs} ms added`,
        met: local50 <= goals.inference.localAddedMs,
        notes: `${interleaved}; ${addedText(samples.localNode, samples.localDirect)}; through A's socket ${ms(samples.localNode)}; direct ${ms(samples.localDirect)}; X-Mesh-Overhead-Ms ${ms(reported.localNode)}`,
      },
      {
        name: "one more HTTP hop at least: a bare pass-through to the local provider (p50 - direct p50)",
        figure: bare50,
        unit: "ms",
        baselineName: "the node's added p50",
        baseline: local50,
        ratio: bare50 / local50,
        notes: `${interleaved}; node:http alone in a process of its own on a Unix socket, the body read whole and parsed, sent on over keep-alive (bench/servers/passthrough.ts): the floor under the local goal on this machine; ${addedText(samples.localBare, samples.localDirect)}; through it ${ms(samples.localBare)}`,
      },
      {
        name: "inference overhead, remote provider (node p50 - direct p50)",
        figure: remote50,
        unit: "ms",
        baselineName: "stream open + 1 KiB echo p50",
        baseline: stream50,
        ratio: remote50 / stream50,
        goal: `<= ${goals.inference.remoteOverStream.toFixed(2)}`,
        met: remote50 / stream50 <= goals.inference.remoteOverStream,
        notes: `${interleaved}; ${addedText(samples.remoteNode, samples.remoteDirect)}; through A's socket ${ms(samples.remoteNode)}; direct ${ms(samples.remoteDirect)}; bare stream to a bench peer ${ms(samples.stream)}; the completion written straight onto a stream to a bench peer piping to B's provider ${ms(samples.http)}, added per pair p50 ${httpAdded.p50.toFixed(3)} ms, p99 ${httpAdded.p99.toFixed(3)} ms; X-Mesh-Overhead-Ms ${ms(reported.remoteNode)}; A→B ${paths.join(", ")}`,
      },
      {
        name: "inference time to first chunk, local provider",
        figure: p50(ttfc.localNode),
        unit: "ms",
        baselineName: "direct p50",
        baseline: p50(ttfc.localDirect),
        ratio: p50(ttfc.localNode) / p50(ttfc.localDirect),
        notes: `${STREAM_SAMPLES} streamed completions of each, interleaved; through the node ${ms(ttfc.localNode)}; direct ${ms(ttfc.localDirect)}; ${addedText(ttfc.localNode, ttfc.localDirect)}`,
      },
      {
        name: "inference time to first chunk, remote provider",
        figure: p50(ttfc.remoteNode),
        unit: "ms",
        baselineName: "direct p50",
        baseline: p50(ttfc.remoteDirect),
        ratio: p50(ttfc.remoteNode) / p50(ttfc.remoteDirect),
        notes: `${STREAM_SAMPLES} streamed completions of each, interleaved; through the node ${ms(ttfc.remoteNode)}; direct ${ms(ttfc.remoteDirect)}; ${addedText(ttfc.remoteNode, ttfc.remoteDirect)}`,
      },
    ] satisfies ReadonlyArray<Entry>
  })

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const [localPort, remotePort] = [await freePort(), await freePort()]
  const folder = mkdtempSync(join(tmpdir(), "mesh-bench-"))
  const urls = {
    local: `http://127.0.0.1:${localPort}`,
    remote: `http://127.0.0.1:${remotePort}`,
    remotePort,
    passthrough: join(folder, "passthrough.sock"),
  }
  const passthroughPort = await freePort()
  const providers = [
    await start("bench/servers/openai.ts", [String(localPort), "local-model"], `${urls.local}/v1/models`),
    await start("bench/servers/openai.ts", [String(remotePort), "remote-model"], `${urls.remote}/v1/models`),
    await start(
      "bench/servers/passthrough.ts",
      [String(passthroughPort), urls.passthrough, urls.local],
      `http://127.0.0.1:${passthroughPort}/`,
    ),
  ]
  try {
    return await Effect.runPromise(Effect.scoped(measure(urls)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
  } finally {
    await Promise.all(providers.map((p) => p.stop()))
    rmSync(folder, { recursive: true, force: true })
  }
}

/**
 * Inference routing, in one run. Node A publishes provider `local-llm` (model `local-model`), node B `remote-llm`
 * (model `remote-model`), each an OpenAI-compatible child process. Interleaved one by one, so load from elsewhere
 * hits all alike: a small non-streaming chat completion through A's `/v1/chat/completions` to its own provider and
 * to B's, the same call straight to each provider, and a bare stream open + 1 KiB echo between A and B; then the
 * time to the first chunk of a streamed completion, through A and straight to the provider, for both. A and B talk
 * over one direct connection, and both nodes share this process: both ends of every stream are paid for on one
 * event loop, so the remote figures are a floor for two machines.
 */
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"
import { Effect, Exit, Scope } from "effect"
import { goals } from "./lib/goals.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import * as TwoNodes from "./lib/twoNodes.js"

const WARMUP = 300
const SAMPLES = 2000
const STREAM_SAMPLES = 500

const body = (model: string, stream: boolean) =>
  Buffer.from(JSON.stringify({ model, messages: [{ role: "user", content: "Say hello." }], stream }))

/**
 * One POST over a keep-alive agent; resolves with the ms to the first body byte and to the end, once the answer
 * has been read through.
 */
const post = (
  agent: Agent,
  url: string,
  headers: Record<string, string>,
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
        headers: { ...headers, "content-type": "application/json", "content-length": String(payload.length) },
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

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const [localPort, remotePort] = [await freePort(), await freePort()]
  const localUrl = `http://127.0.0.1:${localPort}`
  const remoteUrl = `http://127.0.0.1:${remotePort}`
  const providers = [
    await start("bench/servers/openai.ts", [String(localPort), "local-model"], `${localUrl}/v1/models`),
    await start("bench/servers/openai.ts", [String(remotePort), "remote-model"], `${remoteUrl}/v1/models`),
  ]
  const scope = Effect.runSync(Scope.make())
  try {
    const service = (name: string, url: string) => ({
      name,
      type: "inference" as const,
      description: "",
      target_url: url,
      env: {},
    })
    const mesh = await TwoNodes.make(scope, {
      a: [service("local-llm", localUrl)],
      b: [service("remote-llm", remoteUrl)],
    })
    const token = { authorization: `Bearer ${mesh.a.apiToken}` }
    // Both models must be known to A before measuring (publication and discovery take a moment).
    const deadline = performance.now() + 60_000
    for (;;) {
      const listed = await fetch(`${mesh.a.url}/v1/models`, { headers: token }).then((r) => r.json())
      const ids = (listed as { data?: Array<{ id: string }> }).data?.map((m) => m.id) ?? []
      if (ids.includes("local-model") && ids.includes("remote-model")) break
      if (performance.now() > deadline) throw new Error("the models never showed up on node A")
      await new Promise((resolve) => setTimeout(resolve, 200))
    }

    const agents = {
      node: new Agent({ keepAlive: true, maxSockets: 1 }),
      direct: new Agent({ keepAlive: true, maxSockets: 1 }),
    }
    const through = `${mesh.a.url}/v1/chat/completions`
    const calls = {
      localNode: (stream: boolean) => post(agents.node, through, token, body("local-model", stream)),
      localDirect: (stream: boolean) =>
        post(agents.direct, `${localUrl}/v1/chat/completions`, {}, body("local-model", stream)),
      remoteNode: (stream: boolean) => post(agents.node, through, token, body("remote-model", stream)),
      remoteDirect: (stream: boolean) =>
        post(agents.direct, `${remoteUrl}/v1/chat/completions`, {}, body("remote-model", stream)),
    }
    const check = await calls.remoteNode(false)
    if (check.provider !== mesh.bId) throw new Error("remote-model was not served by node B")
    if ((await calls.localNode(false)).provider !== mesh.aId) throw new Error("local-model was not served by node A")

    for (let i = 0; i < WARMUP; i++) {
      await calls.localNode(false)
      await calls.localDirect(false)
      await calls.remoteNode(false)
      await calls.remoteDirect(false)
      await TwoNodes.echo(mesh)
    }
    const samples = {
      localNode: [] as Array<number>,
      localDirect: [] as Array<number>,
      remoteNode: [] as Array<number>,
      remoteDirect: [] as Array<number>,
      stream: [] as Array<number>,
    }
    // What the node says it added (X-Mesh-Overhead-Ms), against what the client saw.
    const reported = { local: [] as Array<number>, remote: [] as Array<number> }
    for (let i = 0; i < SAMPLES; i++) {
      const local = await calls.localNode(false)
      samples.localNode.push(local.total)
      reported.local.push(local.overhead)
      samples.localDirect.push((await calls.localDirect(false)).total)
      const remote = await calls.remoteNode(false)
      samples.remoteNode.push(remote.total)
      reported.remote.push(remote.overhead)
      samples.remoteDirect.push((await calls.remoteDirect(false)).total)
      samples.stream.push(await TwoNodes.echo(mesh))
    }
    const ttfc = {
      localNode: [] as Array<number>,
      localDirect: [] as Array<number>,
      remoteNode: [] as Array<number>,
      remoteDirect: [] as Array<number>,
    }
    for (let i = 0; i < STREAM_SAMPLES; i++) {
      ttfc.localNode.push((await calls.localNode(true)).first)
      ttfc.localDirect.push((await calls.localDirect(true)).first)
      ttfc.remoteNode.push((await calls.remoteNode(true)).first)
      ttfc.remoteDirect.push((await calls.remoteDirect(true)).first)
    }
    mesh.checkConnection()
    agents.node.destroy()
    agents.direct.destroy()

    const p50 = (xs: ReadonlyArray<number>) => TwoNodes.percentile(xs, 0.5)
    const p99 = (xs: ReadonlyArray<number>) => TwoNodes.percentile(xs, 0.99)
    const stream50 = p50(samples.stream)
    const added = {
      local50: p50(samples.localNode) - p50(samples.localDirect),
      local99: p99(samples.localNode) - p99(samples.localDirect),
      remote50: p50(samples.remoteNode) - p50(samples.remoteDirect),
      remote99: p99(samples.remoteNode) - p99(samples.remoteDirect),
    }
    const interleaved = `${SAMPLES} of each, interleaved`
    return [
      {
        name: "inference overhead, local provider (node p50 - direct p50)",
        figure: added.local50,
        unit: "ms",
        baselineName: "direct p50",
        baseline: p50(samples.localDirect),
        ratio: p50(samples.localNode) / p50(samples.localDirect),
        goal: `<= ${goals.inference.localAddedMs} ms added`,
        met: added.local50 <= goals.inference.localAddedMs,
        notes: `${interleaved}; p99 added ${added.local99.toFixed(3)} ms; through the node ${TwoNodes.ms(samples.localNode)}; direct ${TwoNodes.ms(samples.localDirect)}; X-Mesh-Overhead-Ms ${TwoNodes.ms(reported.local)}`,
      },
      {
        name: "inference overhead, remote provider (node p50 - direct p50)",
        figure: added.remote50,
        unit: "ms",
        baselineName: "stream open + 1 KiB echo p50",
        baseline: stream50,
        ratio: added.remote50 / stream50,
        goal: `<= ${goals.inference.remoteOverStream.toFixed(2)}`,
        met: added.remote50 / stream50 <= goals.inference.remoteOverStream,
        notes: `${interleaved}; p99 added ${added.remote99.toFixed(3)} ms; through the node ${TwoNodes.ms(samples.remoteNode)}; direct ${TwoNodes.ms(samples.remoteDirect)}; bare stream ${TwoNodes.ms(samples.stream)}; X-Mesh-Overhead-Ms ${TwoNodes.ms(reported.remote)}`,
      },
      {
        name: "inference time to first chunk, local provider",
        figure: p50(ttfc.localNode),
        unit: "ms",
        baselineName: "direct p50",
        baseline: p50(ttfc.localDirect),
        ratio: p50(ttfc.localNode) / p50(ttfc.localDirect),
        notes: `${STREAM_SAMPLES} streamed completions of each, interleaved; through the node ${TwoNodes.ms(ttfc.localNode)}; direct ${TwoNodes.ms(ttfc.localDirect)}`,
      },
      {
        name: "inference time to first chunk, remote provider",
        figure: p50(ttfc.remoteNode),
        unit: "ms",
        baselineName: "direct p50",
        baseline: p50(ttfc.remoteDirect),
        ratio: p50(ttfc.remoteNode) / p50(ttfc.remoteDirect),
        notes: `${STREAM_SAMPLES} streamed completions of each, interleaved; through the node ${TwoNodes.ms(ttfc.remoteNode)}; direct ${TwoNodes.ms(ttfc.remoteDirect)}; added p50 ${(p50(ttfc.remoteNode) - p50(ttfc.remoteDirect)).toFixed(3)} ms`,
      },
    ]
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await Promise.all(providers.map((p) => p.stop()))
  }
}

/**
 * The proxy to a service on a peer, in one run: a small request from a local client through node A to node B's
 * backend (`/mesh/<B>/inference/bench/small`), the same request straight to the backend over loopback, and a bare
 * stream open + 1 KiB echo between A and B, interleaved one by one so load from elsewhere hits all three alike; then
 * 1 MiB response and request bodies through the proxy, straight to the backend, and on a bare stream. A and B talk
 * over one direct connection (as after discovery), and everything but the backend (a child process) shares this
 * process: both ends of every stream are paid for on one event loop, so figures are a floor for two machines.
 */
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"
import type { Connection } from "@libp2p/interface"
import { Effect, Exit, Scope } from "effect"
import { goals } from "./lib/goals.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import * as TwoNodes from "./lib/twoNodes.js"

const SINK = "/mesh/bench/sink/1.0.0"
const WARMUP = 300
const SAMPLES = 2000
const LARGE = 1024 * 1024
const LARGE_WARMUP = 8
const LARGE_REQUESTS = 64

/** One HTTP exchange over a keep-alive agent: status and bytes received. */
const exchange = (
  agent: Agent,
  url: string,
  headers: Record<string, string>,
  body?: Uint8Array,
): Promise<{ status: number; bytes: number }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { agent, method: body === undefined ? "GET" : "POST", headers }, (res) => {
      let bytes = 0
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(body)
  })

const timed = async (work: () => Promise<{ status: number }>): Promise<number> => {
  const started = performance.now()
  const { status } = await work()
  if (status !== 200) throw new Error(`status ${status}`)
  return performance.now() - started
}

/** 1 MiB sent on a fresh stream and its length read back: the transport's floor for a large body. */
const sink = async (connection: Connection, body: Uint8Array): Promise<{ status: number; bytes: number }> => {
  const stream = await connection.newStream(SINK, { runOnLimitedConnection: true })
  for (let offset = 0; offset < body.byteLength; offset += 65536) {
    if (!stream.send(body.subarray(offset, offset + 65536))) await stream.onDrain()
  }
  await stream.close()
  let answer = ""
  for await (const chunk of stream) answer += new TextDecoder().decode(chunk.subarray())
  return { status: Number(answer) === body.byteLength ? 200 : 500, bytes: body.byteLength }
}

/** MiB/s of `count` sequential exchanges of 1 MiB bodies. */
const throughput = async (count: number, work: () => Promise<{ status: number; bytes: number }>) => {
  let bytes = 0
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const answer = await work()
    if (answer.status !== 200) throw new Error(`status ${answer.status}`)
    bytes += answer.bytes
  }
  return { mibps: count / ((performance.now() - started) / 1000), bytes }
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const port = await freePort()
  const backendUrl = `http://127.0.0.1:${port}`
  const backend = await start("bench/servers/backend.ts", [String(port)], `${backendUrl}/small`)
  const scope = Effect.runSync(Scope.make())
  try {
    const service = { name: "bench", type: "inference" as const, description: "", target_url: backendUrl, env: {} }
    const mesh = await TwoNodes.make(scope, { b: [service] })
    await mesh.hostB.libp2p.handle(
      SINK,
      async (stream) => {
        let size = 0
        for await (const chunk of stream) size += chunk.byteLength
        stream.send(new TextEncoder().encode(String(size)))
        await stream.close()
      },
      { runOnLimitedConnection: true },
    )
    const connection = mesh.connection
    const toNode = new Agent({ keepAlive: true, maxSockets: 1 })
    const toBackend = new Agent({ keepAlive: true, maxSockets: 1 })
    const token = { "x-mesh-authentication": `Bearer ${mesh.a.apiToken}` }
    const proxied = `${mesh.a.url}/mesh/${mesh.bId}/inference/bench`

    const proxySmall = () => exchange(toNode, `${proxied}/small`, token)
    const directSmall = () => exchange(toBackend, `${backendUrl}/small`, {})
    for (let i = 0; i < WARMUP; i++) {
      await timed(proxySmall)
      await timed(directSmall)
      await TwoNodes.echo(mesh)
    }
    const samples = { proxy: [] as Array<number>, direct: [] as Array<number>, stream: [] as Array<number> }
    for (let i = 0; i < SAMPLES; i++) {
      samples.proxy.push(await timed(proxySmall))
      samples.direct.push(await timed(directSmall))
      samples.stream.push(await TwoNodes.echo(mesh))
    }
    // The proxy must not have fallen back to the relay while we measured.
    mesh.checkConnection()

    const body = new Uint8Array(LARGE).fill(0x62)
    const download = (agent: Agent, url: string, headers: Record<string, string>) => () =>
      exchange(agent, `${url}/large`, headers)
    const upload = (agent: Agent, url: string, headers: Record<string, string>) => async () => {
      const answer = await exchange(
        agent,
        `${url}/sink`,
        { ...headers, "content-type": "application/octet-stream" },
        body,
      )
      return { status: answer.status, bytes: LARGE }
    }
    await throughput(LARGE_WARMUP, download(toNode, proxied, token))
    await throughput(LARGE_WARMUP, upload(toNode, proxied, token))
    await throughput(LARGE_WARMUP, () => sink(connection, body))
    const large = {
      stream: await throughput(LARGE_REQUESTS, () => sink(connection, body)),
      proxyDown: await throughput(LARGE_REQUESTS, download(toNode, proxied, token)),
      directDown: await throughput(LARGE_REQUESTS, download(toBackend, backendUrl, {})),
      proxyUp: await throughput(LARGE_REQUESTS, upload(toNode, proxied, token)),
      directUp: await throughput(LARGE_REQUESTS, upload(toBackend, backendUrl, {})),
    }
    toNode.destroy()
    toBackend.destroy()

    const p50 = { proxy: TwoNodes.percentile(samples.proxy, 0.5), direct: TwoNodes.percentile(samples.direct, 0.5) }
    const stream50 = TwoNodes.percentile(samples.stream, 0.5)
    const overhead = p50.proxy - p50.direct
    const bodies = (name: string, proxy: { mibps: number }, direct: { mibps: number }): Entry => ({
      name: `proxy throughput, 1 MiB ${name} bodies`,
      figure: proxy.mibps,
      unit: "MiB/s",
      baselineName: "1 MiB on a bare stream",
      baseline: large.stream.mibps,
      ratio: proxy.mibps / large.stream.mibps,
      goal: `>= ${goals.proxy.largeBodyMiBps} MiB/s`,
      met: proxy.mibps >= goals.proxy.largeBodyMiBps,
      notes: `${LARGE_REQUESTS} sequential requests over one keep-alive connection, after ${LARGE_WARMUP} to warm up; straight to the backend ${direct.mibps.toFixed(0)} MiB/s`,
    })
    return [
      {
        name: "proxy overhead, small request (proxy p50 - direct p50)",
        figure: overhead,
        unit: "ms",
        baselineName: "stream open + 1 KiB echo p50",
        baseline: stream50,
        ratio: overhead / stream50,
        goal: `<= ${goals.proxy.overheadOverStream.toFixed(2)}`,
        met: overhead / stream50 <= goals.proxy.overheadOverStream,
        notes: `${SAMPLES} of each, interleaved; through the proxy ${TwoNodes.ms(samples.proxy)}; direct ${TwoNodes.ms(samples.direct)}; bare stream ${TwoNodes.ms(samples.stream)}`,
      },
      bodies("response", large.proxyDown, large.directDown),
      bodies("request", large.proxyUp, large.directUp),
    ]
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await backend.stop()
  }
}

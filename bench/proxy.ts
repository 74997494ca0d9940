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
import { Context, Effect, Exit, Logger, LogLevel, Scope } from "effect"
import { MeshHost, type MeshHostService } from "../src/services/mesh/MeshHost.js"
import * as ControlPlaneHarness from "../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../src/testing/MeshClient.js"
import * as NodeHarness from "../src/testing/NodeHarness.js"
import * as RouterHarness from "../src/testing/RouterHarness.js"
import { goals } from "./lib/goals.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"

const ECHO = "/mesh/bench/echo/1.0.0"
const SINK = "/mesh/bench/sink/1.0.0"
const PAYLOAD = new Uint8Array(1024).map((_, i) => i % 251)
const WARMUP = 300
const SAMPLES = 2000
const LARGE = 1024 * 1024
const LARGE_WARMUP = 8
const LARGE_REQUESTS = 64

const POLICY = {
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["*"], allowed_targets: ["*"] }],
  bindings: [],
}

const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? Number.NaN
}

const quietly = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))

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

/** One stream open + 1 KiB echo round trip over the existing connection, in ms. */
const echo = async (connection: Connection): Promise<{ status: number }> => {
  const stream = await connection.newStream(ECHO, { runOnLimitedConnection: true })
  stream.send(PAYLOAD)
  await stream.close()
  let received = 0
  for await (const chunk of stream) received += chunk.byteLength
  return { status: received === PAYLOAD.byteLength ? 200 : 500 }
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

const memberHost = (node: NodeHarness.NodeHarness) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member" ? Effect.succeed(Context.get(phase.context, MeshHost)) : Effect.dieMessage("not a member"),
  )

const directConnection = (from: MeshHostService, to: string): Connection => {
  const found = from.libp2p.getConnections().find((c) => c.remotePeer.toString() === to && c.limits === undefined)
  if (found === undefined) throw new Error("no direct connection between the nodes")
  return found
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const port = await freePort()
  const backendUrl = `http://127.0.0.1:${port}`
  const backend = await start("bench/servers/backend.ts", [String(port)], `${backendUrl}/small`)
  const scope = Effect.runSync(Scope.make())
  try {
    const mesh = await quietly(
      Effect.gen(function* () {
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
        const policy = yield* MeshClient.json(cp.url, "POST", "/policies", cp.adminToken, POLICY)
        if (policy.status !== 200) return yield* Effect.dieMessage(`policy refused: ${policy.status}`)
        yield* RouterHarness.make(cp)
        const service = { name: "bench", type: "inference" as const, description: "", target_url: backendUrl, env: {} }
        const b = yield* NodeHarness.make(cp, {
          file: { labels: {}, egress: { require_labels: {} }, services: [service] },
        })
        const a = yield* NodeHarness.make(cp)
        yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
        const hostA = yield* memberHost(a)
        const hostB = yield* memberHost(b)
        const addresses = yield* hostB.addresses
        const direct = addresses.find((x) => x.includes("/tcp/") && !x.includes("p2p-circuit"))
        if (direct === undefined) return yield* Effect.dieMessage("node B has no TCP address")
        yield* hostA.dial(direct)
        return { a, hostA, hostB, bId: hostB.peerId }
      }).pipe(Scope.extend(scope)),
    )
    await mesh.hostB.libp2p.handle(
      ECHO,
      async (stream) => {
        for await (const chunk of stream) stream.send(chunk)
        await stream.close()
      },
      { runOnLimitedConnection: true },
    )
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
    const connection = directConnection(mesh.hostA, mesh.bId)
    const toNode = new Agent({ keepAlive: true, maxSockets: 1 })
    const toBackend = new Agent({ keepAlive: true, maxSockets: 1 })
    const token = { "x-mesh-authentication": `Bearer ${mesh.a.apiToken}` }
    const proxied = `${mesh.a.url}/mesh/${mesh.bId}/inference/bench`

    const proxySmall = () => exchange(toNode, `${proxied}/small`, token)
    const directSmall = () => exchange(toBackend, `${backendUrl}/small`, {})
    for (let i = 0; i < WARMUP; i++) {
      await timed(proxySmall)
      await timed(directSmall)
      await timed(() => echo(connection))
    }
    const samples = { proxy: [] as Array<number>, direct: [] as Array<number>, stream: [] as Array<number> }
    for (let i = 0; i < SAMPLES; i++) {
      samples.proxy.push(await timed(proxySmall))
      samples.direct.push(await timed(directSmall))
      samples.stream.push(await timed(() => echo(connection)))
    }
    // The proxy must not have fallen back to the relay while we measured.
    if (directConnection(mesh.hostA, mesh.bId) !== connection) throw new Error("the direct connection changed")

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

    const p50 = { proxy: percentile(samples.proxy, 0.5), direct: percentile(samples.direct, 0.5) }
    const stream50 = percentile(samples.stream, 0.5)
    const overhead = p50.proxy - p50.direct
    const ms = (xs: ReadonlyArray<number>) =>
      `p50 ${percentile(xs, 0.5).toFixed(3)} ms, p99 ${percentile(xs, 0.99).toFixed(3)} ms`
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
        notes: `${SAMPLES} of each, interleaved; through the proxy ${ms(samples.proxy)}; direct ${ms(samples.direct)}; bare stream ${ms(samples.stream)}`,
      },
      bodies("response", large.proxyDown, large.directDown),
      bodies("request", large.proxyUp, large.directUp),
    ]
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await backend.stop()
  }
}

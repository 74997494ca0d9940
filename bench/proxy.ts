/**
 * The proxy to a service on a peer, every party in a process of its own (bench/lib/meshNodes.ts: control plane,
 * router, nodes A and B as `mesh-node run`; the backend; bench peers for the baselines, bench/lib/benchPeers.ts).
 * Interleaved one by one, so load from elsewhere hits all alike:
 * - a small request from this process through A's socket to B's backend (`/mesh/<B>/inference/bench/small`), the
 *   same request straight to the backend over loopback TCP;
 * - a bare stream open + 1 KiB echo to a bench peer (the goal's baseline: what one exchange on a stream costs);
 * - the same small request written as HTTP straight onto a stream to a bench peer, which pipes it to the backend (a
 *   fresh TCP connection per stream): what a proxy could cost at best on this connection kind. B has no such pipe
 *   (the product's ingress checks and rewrites what it forwards, and gets no bench hook), so a bench peer plays B;
 * - the same three over a relay: nodes C → D (D serving the same backend) reach each other only through the
 *   router's relay, and the bench peer's stream and HTTP go through a relay process of its own.
 * Then 1 MiB bodies each way, per direction, interleaved with the same direction on a bare stream to a bench peer
 * (a source stream for responses, a sink for requests) and straight to the backend.
 * "p99 added" is the p99 of per-pair differences (each proxied sample minus the direct sample taken next to it).
 */
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"
import { Effect, Logger, LogLevel } from "effect"
import * as Local from "../test/scale/LocalApi.js"
import * as BenchPeers from "./lib/benchPeers.js"
import { goals } from "./lib/goals.js"
import * as MeshNodes from "./lib/meshNodes.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import { added, addedText, mibps, ms, percentile } from "./lib/stats.js"

const WARMUP = 150
const SAMPLES = 800
const LARGE = 1024 * 1024
const LARGE_WARMUP = 6
const LARGE_REQUESTS = 40

/** One HTTP exchange over a keep-alive agent (to a node's socket when `socketPath` is set): status and bytes read. */
const exchange = (
  agent: Agent,
  url: string,
  socketPath: string | undefined,
  body?: Uint8Array,
): Promise<{ status: number; bytes: number }> =>
  new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent,
        method: body === undefined ? "GET" : "POST",
        ...(socketPath === undefined ? {} : { socketPath }),
        headers: body === undefined ? {} : { "content-type": "application/octet-stream" },
      },
      (res) => {
        let bytes = 0
        res.on("data", (chunk: Buffer) => {
          bytes += chunk.length
        })
        res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes }))
        res.on("error", reject)
      },
    )
    req.on("error", reject)
    req.end(body)
  })

const timed = async (work: () => Promise<{ status: number }>): Promise<number> => {
  const started = performance.now()
  const { status } = await work()
  if (status !== 200) throw new Error(`status ${status}`)
  return performance.now() - started
}

const p50 = (xs: ReadonlyArray<number>) => percentile(xs, 0.5)

const measure = (port: number) =>
  Effect.gen(function* () {
    const backendUrl = `http://127.0.0.1:${port}`
    const [mesh, peers] = yield* Effect.all(
      [
        MeshNodes.make({
          b: [MeshNodes.service("inference", "bench", backendUrl)],
          discover: [["inference", "bench"]],
          relayed: true,
        }),
        BenchPeers.make(port, { relayed: true }),
      ],
      { concurrency: "unbounded" },
    )
    const relayedMesh = mesh.relayed
    const relayedPeer = peers.relayed
    if (relayedMesh === undefined || relayedPeer === undefined) return yield* Effect.dieMessage("no relayed pair")
    const agents = {
      a: new Agent({ keepAlive: true, maxSockets: 1 }),
      c: new Agent({ keepAlive: true, maxSockets: 1 }),
    }
    const toBackend = new Agent({ keepAlive: true, maxSockets: 1 })
    yield* Effect.addFinalizer(() => Effect.sync(() => [agents.a, agents.c, toBackend].forEach((a) => a.destroy())))
    const proxied = (pair: MeshNodes.Pair) => `${Local.BASE}/mesh/${pair.toId}/inference/bench`

    const calls = {
      proxy: () => timed(() => exchange(agents.a, `${proxied(mesh.direct)}/small`, mesh.direct.from.socketPath)),
      direct: () => timed(() => exchange(toBackend, `${backendUrl}/small`, undefined)),
      stream: () => BenchPeers.echo(peers.direct),
      http: () => BenchPeers.http(peers.host, peers.direct, "/small"),
      relayedProxy: () => timed(() => exchange(agents.c, `${proxied(relayedMesh)}/small`, relayedMesh.from.socketPath)),
      relayedStream: () => BenchPeers.echo(relayedPeer),
      relayedHttp: () => BenchPeers.http(peers.host, relayedPeer, "/small"),
    }
    type Kind = keyof typeof calls
    const kinds = Object.keys(calls) as Array<Kind>
    const samples = Object.fromEntries(kinds.map((k) => [k, [] as Array<number>])) as Record<Kind, Array<number>>
    yield* Effect.promise(async () => {
      for (let i = 0; i < WARMUP + SAMPLES; i++) {
        for (const kind of kinds) {
          const took = await calls[kind]()
          if (i >= WARMUP) samples[kind].push(took)
        }
      }
    })
    // Each path must have kept its kind of connection while we measured.
    const directPaths = yield* mesh.direct.check("direct")
    const relayedPaths = yield* relayedMesh.check("relayed")
    peers.direct.check()
    relayedPeer.check()

    const body = new Uint8Array(LARGE).fill(0x62)
    const large = {
      proxyDown: () => timed(() => exchange(agents.a, `${proxied(mesh.direct)}/large`, mesh.direct.from.socketPath)),
      streamDown: () => BenchPeers.source(peers.direct),
      directDown: () => timed(() => exchange(toBackend, `${backendUrl}/large`, undefined)),
      proxyUp: () => timed(() => exchange(agents.a, `${proxied(mesh.direct)}/sink`, mesh.direct.from.socketPath, body)),
      streamUp: () => BenchPeers.sink(peers.direct, body),
      directUp: () => timed(() => exchange(toBackend, `${backendUrl}/sink`, undefined, body)),
    }
    type Large = keyof typeof large
    const largeKinds = Object.keys(large) as Array<Large>
    const largeSamples = Object.fromEntries(largeKinds.map((k) => [k, [] as Array<number>])) as Record<
      Large,
      Array<number>
    >
    yield* Effect.promise(async () => {
      for (let i = 0; i < LARGE_WARMUP + LARGE_REQUESTS; i++) {
        for (const kind of largeKinds) {
          const took = await large[kind]()
          if (i >= LARGE_WARMUP) largeSamples[kind].push(took)
        }
      }
    })
    yield* mesh.direct.check("direct")

    const overhead = p50(samples.proxy) - p50(samples.direct)
    const stream50 = p50(samples.stream)
    const httpAdded = p50(samples.http) - p50(samples.direct)
    const relayedOverhead = p50(samples.relayedProxy) - p50(samples.direct)
    const relayedStream50 = p50(samples.relayedStream)
    const interleaved = `${SAMPLES} of each, interleaved, after ${WARMUP}`
    const bodies = (
      name: string,
      proxy: ReadonlyArray<number>,
      stream: ReadonlyArray<number>,
      direct: ReadonlyArray<number>,
      baselineName: string,
    ): Entry => {
      const figure = mibps(proxy)
      const baseline = mibps(stream)
      return {
        name: `proxy throughput, 1 MiB ${name} bodies`,
        figure,
        unit: "MiB/s",
        baselineName,
        baseline,
        ratio: figure / baseline,
        goal: `>= ${goals.proxy.largeBodyShareOfStream.toFixed(2)}`,
        met: figure / baseline >= goals.proxy.largeBodyShareOfStream,
        notes: `${LARGE_REQUESTS} sequential requests of each, interleaved with the bare stream and the backend, after ${LARGE_WARMUP}; A over one keep-alive socket connection; straight to the backend ${mibps(direct).toFixed(0)} MiB/s; per request through the proxy ${ms(proxy)}, bare stream ${ms(stream)}`,
      }
    }
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
        notes: `${interleaved}; ${addedText(samples.proxy, samples.direct)}; through A's socket ${ms(samples.proxy)}; direct ${ms(samples.direct)}; bare stream to a bench peer ${ms(samples.stream)}; A→B ${directPaths.join(", ")}`,
      },
      {
        name: "proxy overhead over HTTP written straight onto a stream (added p50 / added p50)",
        figure: overhead,
        unit: "ms",
        baselineName: "HTTP on a stream, piped to the backend, p50 - direct p50",
        baseline: httpAdded,
        ratio: overhead / httpAdded,
        notes: `the same rounds; HTTP on a stream to a bench peer ${ms(samples.http)}, ${addedText(samples.http, samples.direct)}`,
      },
      {
        name: "proxy overhead, small request, relayed (proxy p50 - direct p50)",
        figure: relayedOverhead,
        unit: "ms",
        baselineName: "stream open + 1 KiB echo via relay p50",
        baseline: relayedStream50,
        ratio: relayedOverhead / relayedStream50,
        notes: `the same rounds; C→D ${relayedPaths.join(", ")} through the router; ${addedText(samples.relayedProxy, samples.direct)}; through C's socket ${ms(samples.relayedProxy)}; bare stream via a relay ${ms(samples.relayedStream)}; HTTP on a stream via a relay ${ms(samples.relayedHttp)} (added p50 ${(p50(samples.relayedHttp) - p50(samples.direct)).toFixed(3)} ms, p99 per pair ${added(samples.relayedHttp, samples.direct).p99.toFixed(3)} ms)`,
      },
      bodies(
        "response",
        largeSamples.proxyDown,
        largeSamples.streamDown,
        largeSamples.directDown,
        "1 MiB from a bench peer on a bare stream",
      ),
      bodies(
        "request",
        largeSamples.proxyUp,
        largeSamples.streamUp,
        largeSamples.directUp,
        "1 MiB to a bench peer on a bare stream",
      ),
    ]
  })

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const port = await freePort()
  const backend = await start("bench/servers/backend.ts", [String(port)], `http://127.0.0.1:${port}/small`)
  try {
    return await Effect.runPromise(Effect.scoped(measure(port)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
  } finally {
    await backend.stop()
  }
}

/**
 * Round trips across the mesh. Node A and node B are `mesh-node run` processes (with a control plane and a router,
 * also processes) that reach each other only through links adding `BENCH_RTT_DELAY_MS` (default 25 ms) each way:
 * each node listens on loopback and tells its peers (`--external-addr`) the port of a delaying forwarder in front of
 * it, and the router does the same, so a direct connection and a relayed one both pay the delay. The benchmark talks
 * to A over its Unix socket, as an agent on A's machine does, and reports what each path adds over the same call
 * straight to the backend, in round trips: `(p50 through the mesh − p50 direct) / RTT`, where RTT is the link's
 * own, measured in the same rounds (a byte echoed across a forwarder: the forwarder's timers fire late too, about a
 * millisecond a round trip on a quiet machine). One round trip is the physical limit of a request to a peer already
 * connected.
 *
 * Warm: a proxied `GET /mesh/<B>/inference/bench/v1/models`, `call_remote_tool` of an echo on B's MCP service
 * through A's `/mcp` (MCP SDK client), and a streamed completion's first chunk through A's `/v1` (the `openai`
 * package), interleaved with their direct counterparts. Cold: the first proxied request to B (it opens the
 * connection), the first `call_remote_tool` to each of several MCP services of B that A has not called yet (the
 * connection is open; once before the warm rounds, the processes' first sessions, and once after), the first
 * streamed completion. The same for a modern-only (2026-07-28) MCP server on B: its warm `call_remote_tool`, and the
 * first call to each of several such services (one self-describing request: no session to open anywhere), before the
 * warm rounds and after them.
 *
 * Then, on loopback without delay, two more pairs of nodes: one started with the default V8 flags
 * (`--optimize-for-size`, src/platform/memory.ts) and one with `MESH_V8_FLAGS=` (V8's own defaults), their proxied
 * small requests interleaved: what the memory setting costs in speed.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect, Logger, LogLevel, type Scope } from "effect"
import OpenAI from "openai"
import * as Local from "../test/scale/LocalApi.js"
import { poll } from "../test/scale/Requests.js"
import * as Topology from "../test/scale/Topology.js"
import * as DelayForwarder from "./lib/DelayForwarder.js"
import { goals } from "./lib/goals.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import { ms, percentile } from "./lib/stats.js"

const DELAY_MS = Number(process.env.BENCH_RTT_DELAY_MS ?? 25)
const RTT_MS = 2 * DELAY_MS
const WARMUP = 3
const SAMPLES = 30
/**
 * MCP services on B: the first is the one called warm; COLD of the others are called once each before the warm
 * rounds (the processes' first sessions), and COLD more after them (a first call to a service in a running process).
 */
const COLD = 4
/** `BENCH_AB_V8_FLAGS`: V8 flags for A and B (their `MESH_V8_FLAGS`), to compare settings on the delayed pair. */
const AB_V8_FLAGS = process.env.BENCH_AB_V8_FLAGS
const MCP_SERVICES = 1 + 2 * COLD
const LOOPBACK_WARMUP = 50
const LOOPBACK_SAMPLES = 300
const MODEL = "remote-model"
const TEXT = "x".repeat(64)

const p50 = (xs: ReadonlyArray<number>) => percentile(xs, 0.5)

const timed = async (work: () => Promise<unknown>): Promise<number> => {
  const started = performance.now()
  await work()
  return performance.now() - started
}

/** A GET whose body is read through; anything but 200 is an error. */
const get = async (fetcher: typeof globalThis.fetch, url: string) => {
  const response = await fetcher(url)
  const body = await response.text()
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${body.slice(0, 200)}`)
}

const mcpClient = async (url: string, fetcher?: typeof globalThis.fetch) => {
  const client = new Client({ name: "bench-rtt", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetcher === undefined ? {} : { fetch: fetcher }))
  return client
}

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

/**
 * ms to the first chunk of a streamed completion; the rest is read through. `provider`: the peer that must have
 * served it (X-Mesh-Provider), for calls through a node.
 */
const firstChunk = async (openai: OpenAI, provider?: string) => {
  const started = performance.now()
  const { data: stream, response } = await openai.chat.completions
    .create({ model: MODEL, messages: [{ role: "user", content: "Say hello." }], stream: true })
    .withResponse()
  const servedBy = response.headers.get("x-mesh-provider")
  if (provider !== undefined && servedBy !== provider) throw new Error(`${MODEL} was served by ${servedBy}`)
  let first = -1
  for await (const _ of stream) if (first < 0) first = performance.now() - started
  if (first < 0) throw new Error("the completion streamed nothing")
  return first
}

const paths = (node: Topology.Node, peer: string) =>
  Local.json<{ peer?: { paths?: ReadonlyArray<string> } }>(node, `/debug/connectivity?peer=${peer}`).pipe(
    Effect.map((info) => info.peer?.paths ?? []),
  )

/** Waits until `node`'s discovery finds `peer` providing `type`/`name`, which also tells it the peer's addresses. */
const discovered = (node: Topology.Node, peer: string, type: string, name: string) =>
  poll(Topology.discover(node, type, name), (found) => found.includes(peer), {
    what: `${node.name} discovers ${type}/${name} on ${peer}`,
    timeout: Duration.seconds(90),
    interval: Duration.millis(500),
  })

const roundTrips = (
  name: string,
  mesh: ReadonlyArray<number>,
  direct: ReadonlyArray<number>,
  link: ReadonlyArray<number>,
  goal: number | undefined,
  notes: string,
): Entry => {
  const added = p50(mesh) - p50(direct)
  const rtt = p50(link)
  return {
    name,
    figure: added,
    unit: "ms",
    baselineName: `the link's RTT (${DELAY_MS} ms each way), measured`,
    baseline: rtt,
    ratio: added / rtt,
    ...(goal === undefined ? {} : { goal: `<= ${goal} RTT`, met: added / rtt <= goal }),
    notes: `${notes}; through the mesh ${ms(mesh)} (n=${mesh.length}); direct ${ms(direct)} (n=${direct.length}); a byte across the link and back ${ms(link)} (n=${link.length})`,
  }
}

const measure = (
  folder: string,
  backends: { readonly openai: string; readonly mcp: string; readonly modern: string; readonly loopback: string },
): Effect.Effect<ReadonlyArray<Entry>, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const forwarder = (port: number) =>
      Effect.acquireRelease(
        Effect.promise(() => DelayForwarder.start(port, DELAY_MS)),
        (f) => Effect.promise(() => f.close()),
      )
    const external = (f: DelayForwarder.DelayForwarder) => ["--external-addr", `/ip4/127.0.0.1/tcp/${f.port}`]

    const cp = yield* Topology.controlPlane({ folder })
    const routerPort = yield* Effect.promise(freePort)
    const routerLink = yield* forwarder(routerPort)
    yield* Topology.router(cp, folder, "router", { port: routerPort, extraArgs: external(routerLink) })

    const inference = (name: string, url = backends.openai) =>
      `  - { name: ${name}, type: inference, target_url: '${url}' }`
    const mcp = (name: string) => `  - { name: ${name}, type: mcp, target_url: '${backends.mcp}' }`
    const mcpNames = Array.from({ length: MCP_SERVICES }, (_, i) => `bench-${i + 1}`)
    const modernNames = Array.from({ length: 1 + 2 * COLD }, (_, i) => `modern-${i + 1}`)
    const modern = (name: string) => `  - { name: ${name}, type: mcp, target_url: '${backends.modern}' }`
    const delayedNode = (name: string, services: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        if (process.env.BENCH_LINK_TRACE === "1") console.error(`node ${name} listens at ${port}`)
        const link = yield* forwarder(port)
        const node = yield* Topology.node(cp, folder, name, {
          ...(AB_V8_FLAGS === undefined ? {} : { env: { MESH_V8_FLAGS: AB_V8_FLAGS } }),
          listen: `/ip4/127.0.0.1/tcp/${port}`,
          extraArgs: external(link),
          config: services.length === 0 ? "labels: {}\n" : ["services:", ...services, ""].join("\n"),
        })
        return { node, link }
      })
    const loopbackNode = (name: string, v8Flags: string | undefined, services: ReadonlyArray<string>) =>
      Topology.node(cp, folder, name, {
        ...(v8Flags === undefined ? {} : { env: { MESH_V8_FLAGS: v8Flags } }),
        config: services.length === 0 ? "labels: {}\n" : ["services:", ...services, ""].join("\n"),
      })
    const [a, b, c, d, e, f] = yield* Effect.all(
      [
        delayedNode("a", []),
        delayedNode("b", [inference("bench"), ...mcpNames.map(mcp), ...modernNames.map(modern)]),
        loopbackNode("c", undefined, []),
        loopbackNode("d", undefined, [inference("bench", backends.loopback)]),
        loopbackNode("e", "", []),
        loopbackNode("f", "", [inference("bench", backends.loopback)]),
      ] as const,
      { concurrency: "unbounded" },
    )
    const [bId, dId, fId] = yield* Effect.all(
      [b.node, d, f, a.node, c, e].map((node) => Topology.peerIdOf(node)),
      { concurrency: "unbounded" },
    )
    if (bId === undefined || dId === undefined || fId === undefined) return yield* Effect.dieMessage("no peer ids")
    yield* Effect.all(
      [
        ...mcpNames.map((name) => discovered(a.node, bId, "mcp", name)),
        ...modernNames.map((name) => discovered(a.node, bId, "mcp", name)),
        discovered(a.node, bId, "inference", "bench"),
        discovered(c, dId, "inference", "bench"),
        discovered(e, fId, "inference", "bench"),
      ],
      { concurrency: "unbounded" },
    )

    // The link's own round trip, measured beside the paths: the physical limit they are compared with.
    const link = yield* Effect.acquireRelease(
      Effect.promise(() => DelayForwarder.probe(DELAY_MS)),
      (probe) => Effect.promise(() => probe.close()),
    )
    const viaA = Local.fetchFor(a.node)
    const proxied = `${Local.BASE}/mesh/${bId}/inference/bench/v1/models`
    const directModels = `${backends.openai}/v1/models`
    const loopbackModels = `${backends.loopback}/v1/models`
    // Discovery may already have connected A to B: recorded, since then the first request does not open it.
    const before = yield* paths(a.node, bId)
    // Cold: A's first request to B.
    const coldProxy = yield* Effect.promise(() => timed(() => get(viaA, proxied)))

    const agent = yield* Effect.promise(() => mcpClient(`${Local.BASE}/mcp`, viaA))
    const straight = yield* Effect.promise(() => mcpClient(backends.mcp))
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([agent.close(), straight.close()])))
    const callRemote = (service: string) => async () => {
      const result = (await agent.callTool({
        name: "call_remote_tool",
        arguments: { peer_id: bId, tool_name: `mcp://${service}/echo`, arguments: { text: TEXT } },
      })) as CallToolResult
      if (result.isError === true || textOf(result) !== TEXT) throw new Error(`call_remote_tool: ${textOf(result)}`)
    }
    // A modern-only server: the direct counterpart is the SDK v2 client pinned to 2026-07-28 (no session).
    const straightModern = new ModernClient(
      { name: "bench-rtt", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    )
    yield* Effect.promise(() => straightModern.connect(new ModernTransport(new URL(backends.modern))))
    yield* Effect.addFinalizer(() => Effect.promise(() => straightModern.close()))
    const callModernDirect = async () => {
      const result = (await straightModern.callTool({ name: "echo", arguments: { text: TEXT } })) as CallToolResult
      if (textOf(result) !== TEXT) throw new Error("the modern backend's echo went wrong")
    }
    const callDirect = async () => {
      const result = (await straight.callTool({ name: "echo", arguments: { text: TEXT } })) as CallToolResult
      if (textOf(result) !== TEXT) throw new Error("the backend's echo went wrong")
    }
    // Cold: the first call to each service but the one measured warm, over the connection opened above.
    const coldCalls: Array<number> = []
    for (const service of mcpNames.slice(1, 1 + COLD)) {
      coldCalls.push(yield* Effect.promise(() => timed(callRemote(service))))
    }

    const coldModern: Array<number> = []
    for (const service of modernNames.slice(1, 1 + COLD)) {
      if (process.env.BENCH_LINK_TRACE === "1") console.error(`call ${performance.now().toFixed(1)} start ${service}`)
      coldModern.push(yield* Effect.promise(() => timed(callRemote(service))))
      if (process.env.BENCH_LINK_TRACE === "1") console.error(`call ${performance.now().toFixed(1)} end ${service}`)
    }

    const openaiVia = (baseURL: string, fetcher?: typeof globalThis.fetch) =>
      new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, ...(fetcher === undefined ? {} : { fetch: fetcher }) })
    const throughA = openaiVia(`${Local.BASE}/v1`, viaA)
    const toBackend = openaiVia(`${backends.openai}/v1`)
    yield* poll(
      Effect.promise(() =>
        viaA(`${Local.BASE}/v1/models`)
          .then((r) => r.json() as Promise<{ data?: ReadonlyArray<{ id: string }> }>)
          .then((listed) => listed.data?.map((m) => m.id) ?? [])
          .catch(() => [] as ReadonlyArray<string>),
      ),
      (ids) => ids.includes(MODEL),
      { what: `A lists ${MODEL}`, timeout: Duration.seconds(60), interval: Duration.millis(300) },
    )
    const coldCompletion = yield* Effect.promise(() => firstChunk(throughA, bId))

    const samples = {
      proxy: [] as Array<number>,
      models: [] as Array<number>,
      call: [] as Array<number>,
      echo: [] as Array<number>,
      modern: [] as Array<number>,
      modernDirect: [] as Array<number>,
      completion: [] as Array<number>,
      completionDirect: [] as Array<number>,
      link: [] as Array<number>,
    }
    yield* Effect.promise(async () => {
      for (let i = 0; i < WARMUP + SAMPLES; i++) {
        const round = {
          proxy: await timed(() => get(viaA, proxied)),
          models: await timed(() => get(fetch, directModels)),
          call: await timed(callRemote(mcpNames[0] ?? "")),
          echo: await timed(callDirect),
          modern: await timed(callRemote(modernNames[0] ?? "")),
          modernDirect: await timed(callModernDirect),
          completion: await firstChunk(throughA, bId),
          completionDirect: await firstChunk(toBackend),
          link: await link.roundTrip(),
        }
        if (i >= WARMUP) for (const [k, v] of Object.entries(round)) samples[k as keyof typeof samples].push(v)
      }
    })
    // Cold again, now that both processes have run every path for a while: what a new session costs by itself.
    const laterColdCalls: Array<number> = []
    for (const service of mcpNames.slice(1 + COLD)) {
      laterColdCalls.push(yield* Effect.promise(() => timed(callRemote(service))))
    }
    // The same for modern services: a service's first call apart from the processes' first modern calls.
    const laterColdModern: Array<number> = []
    for (const service of modernNames.slice(1 + COLD)) {
      laterColdModern.push(yield* Effect.promise(() => timed(callRemote(service))))
    }
    // A relayed connection from the first contact may stay open as the fallback; a direct one, once there, is the
    // one every exchange takes (MeshHost prefers it).
    const used = yield* paths(a.node, bId)
    if (!used.includes("direct")) {
      return yield* Effect.fail(new Error(`A and B talked over ${used.join(", ") || "nothing"}, not a direct path`))
    }
    if (a.link.accepted() + b.link.accepted() === 0) {
      return yield* Effect.fail(new Error("no connection between A and B went through the delaying links"))
    }

    // Loopback, no delay: default V8 flags (C → D) against V8's own (E → F), interleaved.
    const loop = {
      tuned: { fetch: Local.fetchFor(c), url: `${Local.BASE}/mesh/${dId}/inference/bench/v1/models` },
      plain: { fetch: Local.fetchFor(e), url: `${Local.BASE}/mesh/${fId}/inference/bench/v1/models` },
    }
    const loopSamples = { tuned: [] as Array<number>, plain: [] as Array<number>, direct: [] as Array<number> }
    yield* Effect.promise(async () => {
      for (let i = 0; i < LOOPBACK_WARMUP + LOOPBACK_SAMPLES; i++) {
        const round = {
          tuned: await timed(() => get(loop.tuned.fetch, loop.tuned.url)),
          plain: await timed(() => get(loop.plain.fetch, loop.plain.url)),
          direct: await timed(() => get(fetch, loopbackModels)),
        }
        if (i >= LOOPBACK_WARMUP)
          for (const [k, v] of Object.entries(round)) loopSamples[k as keyof typeof loopSamples].push(v)
      }
    })

    for (const [from, to] of [
      [c, dId],
      [e, fId],
    ] as const) {
      const via = yield* paths(from, to)
      if (!via.includes("direct")) {
        return yield* Effect.fail(new Error(`${from.name} reached its peer over ${via.join(", ") || "nothing"}`))
      }
    }
    const interleaved = `${SAMPLES} rounds, interleaved, after ${WARMUP}; A→B ${used.join(", ")} through the delaying link`
    const cold = (
      name: string,
      sample: number,
      direct: ReadonlyArray<number>,
      goal: number | undefined,
      notes: string,
    ) => roundTrips(name, [sample], direct, samples.link, goal, notes)
    const tuned50 = p50(loopSamples.tuned)
    const plain50 = p50(loopSamples.plain)
    const direct50 = p50(loopSamples.direct)
    return [
      roundTrips(
        `RTT: proxied small request, warm (${RTT_MS} ms RTT)`,
        samples.proxy,
        samples.models,
        samples.link,
        goals.rtt.warm,
        `GET /mesh/<B>/inference/bench/v1/models through A's socket; ${interleaved}`,
      ),
      cold(
        `RTT: proxied small request, cold (${RTT_MS} ms RTT)`,
        coldProxy,
        samples.models,
        undefined,
        `A's first request to B, after discovery; connections to B before it: ${before.length === 0 ? "none (it opens one)" : before.join(", ")}`,
      ),
      roundTrips(
        `RTT: call_remote_tool, warm (${RTT_MS} ms RTT)`,
        samples.call,
        samples.echo,
        samples.link,
        goals.rtt.warm,
        `MCP SDK client on A's /mcp, echo on B's mcp service; direct: SDK client in a session with the backend; ${interleaved}`,
      ),
      roundTrips(
        `RTT: call_remote_tool, cold (${RTT_MS} ms RTT)`,
        coldCalls,
        samples.echo,
        samples.link,
        goals.rtt.coldCallRemoteTool,
        `first call to each of ${coldCalls.length} services of B not called before, over an open connection, before the warm rounds (the processes' first sessions): ${coldCalls.map((x) => x.toFixed(1)).join(", ")} ms`,
      ),
      roundTrips(
        `RTT: call_remote_tool, cold, in running processes (${RTT_MS} ms RTT)`,
        laterColdCalls,
        samples.echo,
        samples.link,
        goals.rtt.coldCallRemoteTool,
        `first call to each of ${laterColdCalls.length} more services of B, after the warm rounds: ${laterColdCalls.map((x) => x.toFixed(1)).join(", ")} ms`,
      ),
      roundTrips(
        `RTT: call_remote_tool to a modern (2026-07-28) server, warm (${RTT_MS} ms RTT)`,
        samples.modern,
        samples.modernDirect,
        samples.link,
        goals.rtt.warm,
        `MCP SDK client on A's /mcp, echo on B's modern-only server (SDK v2, legacy: 'reject'); direct: SDK v2 client pinned to 2026-07-28; ${interleaved}`,
      ),
      roundTrips(
        `RTT: call_remote_tool to a modern (2026-07-28) server, first call (${RTT_MS} ms RTT)`,
        coldModern,
        samples.modernDirect,
        samples.link,
        goals.rtt.firstModernCall,
        `first call to each of ${coldModern.length} modern services of B not called or listed before, over an open connection, before the warm rounds (the processes' first modern calls): ${coldModern.map((x) => x.toFixed(1)).join(", ")} ms`,
      ),
      roundTrips(
        `RTT: call_remote_tool to a modern (2026-07-28) server, first call, in running processes (${RTT_MS} ms RTT)`,
        laterColdModern,
        samples.modernDirect,
        samples.link,
        goals.rtt.firstModernCall,
        `first call to each of ${laterColdModern.length} more modern services of B, after the warm rounds: ${laterColdModern.map((x) => x.toFixed(1)).join(", ")} ms`,
      ),
      roundTrips(
        `RTT: remote completion, time to first chunk, warm (${RTT_MS} ms RTT)`,
        samples.completion,
        samples.completionDirect,
        samples.link,
        goals.rtt.warm,
        `openai package, stream: true, through A's /v1 to B's provider; ${interleaved}`,
      ),
      cold(
        `RTT: remote completion, time to first chunk, cold (${RTT_MS} ms RTT)`,
        coldCompletion,
        samples.completionDirect,
        undefined,
        "A's first completion routed to B, once A lists the model (the connection is open)",
      ),
      {
        name: "proxied small request p50 on loopback, default V8 flags (--optimize-for-size) over V8's own (MESH_V8_FLAGS=)",
        figure: tuned50,
        unit: "ms",
        baselineName: "MESH_V8_FLAGS= p50",
        baseline: plain50,
        ratio: tuned50 / plain50,
        notes: `${LOOPBACK_SAMPLES} of each, interleaved, after ${LOOPBACK_WARMUP}; both nodes of each pair run with the flags; added over direct ${(tuned50 - direct50).toFixed(3)} ms vs ${(plain50 - direct50).toFixed(3)} ms; default ${ms(loopSamples.tuned)}; MESH_V8_FLAGS= ${ms(loopSamples.plain)}; direct ${ms(loopSamples.direct)}`,
      },
    ]
  })

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const [openaiPort, mcpPort, modernPort, loopbackPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ]
  const backends = {
    openai: `http://127.0.0.1:${openaiPort}`,
    mcp: `http://127.0.0.1:${mcpPort}/mcp`,
    modern: `http://127.0.0.1:${modernPort}/mcp`,
    // The loopback pairs' provider serves another model, so that A's completions can only go to B.
    loopback: `http://127.0.0.1:${loopbackPort}`,
  }
  const servers = [
    await start("bench/servers/openai.ts", [String(openaiPort), MODEL], `${backends.openai}/v1/models`),
    await start("bench/servers/openai.ts", [String(loopbackPort), "loopback-model"], `${backends.loopback}/v1/models`),
    await start("bench/servers/mcp.ts", [String(mcpPort)], `http://127.0.0.1:${mcpPort}/healthz`),
    await start("bench/servers/modernMcp.ts", [String(modernPort)], `http://127.0.0.1:${modernPort}/healthz`),
  ]
  const folder = mkdtempSync(join(tmpdir(), "mesh-bench-rtt-"))
  try {
    return await Effect.runPromise(
      Effect.scoped(measure(folder, backends)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)),
    )
  } finally {
    await Promise.all(servers.map((s) => s.stop()))
    rmSync(folder, { recursive: true, force: true })
  }
}

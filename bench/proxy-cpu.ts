/**
 * `tsx bench/proxy-cpu.ts [rounds]`: the CPU time (user + system, from /proc) nodes A and B spend per proxied
 * request, small and 1 MiB each way, and per small completion A routes to its own provider. Unlike latency, a
 * process's CPU time hardly moves when other work loads the machine, so two runs of this (before and after a change)
 * compare on a busy machine too. A's `/healthz` is measured first: what answering on the local API costs without
 * the mesh. `BENCH_V8_FLAGS` sets the nodes' `MESH_V8_FLAGS` (the members drop every `MESH_` variable of the
 * shell), to weigh a V8 setting's CPU cost. `tsx bench/proxy-cpu.ts [rounds] [phase]` runs only the phases whose
 * name holds `phase` (`up`, `small`, `local`): a profile of one kind of request (`MESH_CPU_PROF_DIR`,
 * bench-notes.md).
 */
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"
import { Effect, Logger, LogLevel } from "effect"
import * as Local from "../test/scale/LocalApi.js"
import { cpuMs } from "./lib/cpu.js"
import * as MeshNodes from "./lib/meshNodes.js"
import { freePort, start } from "./lib/processes.js"

const ROUNDS = Number(process.argv[2] ?? 1000)
const LARGE_ROUNDS = Math.max(5, Math.round(ROUNDS / 25))
const ONLY = process.argv[3]

const exchange = (agent: Agent, path: string, socketPath: string, body?: Uint8Array): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request(
      `${Local.BASE}${path}`,
      {
        agent,
        socketPath,
        method: body === undefined ? "GET" : "POST",
        ...(body === undefined ? {} : { headers: { "content-type": "application/json" } }),
      },
      (res) => {
        res.resume()
        res.on("end", () => (res.statusCode === 200 ? resolve(res.statusCode) : reject(new Error(`${res.statusCode}`))))
      },
    )
    req.on("error", reject)
    req.end(body)
  })

const measure = (port: number, providerPort: number) =>
  Effect.gen(function* () {
    const mesh = yield* MeshNodes.make({
      a: [MeshNodes.service("inference", "local-llm", `http://127.0.0.1:${providerPort}`)],
      b: [MeshNodes.service("inference", "bench", `http://127.0.0.1:${port}`)],
      discover: [["inference", "bench"]],
      ...(process.env.BENCH_V8_FLAGS === undefined ? {} : { nodeEnv: { MESH_V8_FLAGS: process.env.BENCH_V8_FLAGS } }),
    })
    const pair = mesh.direct
    const pids = { a: yield* pair.from.pid, b: yield* pair.to.pid }
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const base = `/mesh/${pair.toId}/inference/bench`
    const socket = pair.from.socketPath
    const body = new Uint8Array(1024 * 1024).fill(0x62)
    const completion = Buffer.from(
      JSON.stringify({ model: "local-model", messages: [{ role: "user", content: "Say hello." }], stream: false }),
    )
    /** What the nodes burn doing nothing asked of them (gossip, DHT, timers): it is in every figure below. */
    const idle = async () => {
      const before = { a: cpuMs(pids.a), b: cpuMs(pids.b) }
      await new Promise((resolve) => setTimeout(resolve, 5000))
      const a = (cpuMs(pids.a) - before.a) / 5
      const b = (cpuMs(pids.b) - before.b) / 5
      process.stdout.write(`idle: A ${a.toFixed(1)} ms, B ${b.toFixed(1)} ms CPU per second\n`)
    }
    const phase = async (name: string, rounds: number, one: () => Promise<number>) => {
      if (ONLY !== undefined && !name.includes(ONLY)) return
      for (let i = 0; i < Math.min(100, rounds); i++) await one()
      const before = { a: cpuMs(pids.a), b: cpuMs(pids.b) }
      const started = performance.now()
      for (let i = 0; i < rounds; i++) await one()
      const took = performance.now() - started
      const perA = (cpuMs(pids.a) - before.a) / rounds
      const perB = (cpuMs(pids.b) - before.b) / rounds
      process.stdout.write(
        `${name}: A ${perA.toFixed(3)} ms, B ${perB.toFixed(3)} ms CPU per request (${rounds} in ${(took / 1000).toFixed(1)} s)\n`,
      )
    }
    yield* Effect.promise(async () => {
      await idle()
      // The local API alone, for what A's share of a proxied request owes to serving HTTP at all.
      await phase("A's /healthz", ROUNDS, () => exchange(agent, "/healthz", socket))
      await phase("small", ROUNDS, () => exchange(agent, `${base}/small`, socket))
      // A completion served by A's own provider: the node's routing without the mesh.
      await phase("local completion", ROUNDS, () => exchange(agent, "/v1/chat/completions", socket, completion))
      await phase("1 MiB down", LARGE_ROUNDS, () => exchange(agent, `${base}/large`, socket))
      await phase("1 MiB up", LARGE_ROUNDS, () => exchange(agent, `${base}/sink`, socket, body))
      await idle()
    })
    agent.destroy()
  })

const [port, providerPort] = [await freePort(), await freePort()]
const backend = await start("bench/servers/backend.ts", [String(port)], `http://127.0.0.1:${port}/small`)
const provider = await start(
  "bench/servers/openai.ts",
  [String(providerPort), "local-model"],
  `http://127.0.0.1:${providerPort}/v1/models`,
)
try {
  await Effect.runPromise(Effect.scoped(measure(port, providerPort)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
} finally {
  await Promise.all([backend.stop(), provider.stop()])
}

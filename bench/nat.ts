/**
 * Members behind NAT (issue 51), in the NAT lab (test/scale/NatLab.ts; root only, else one skipped entry): A and B in
 * homes behind cone-like NATs, their path direct once hole punching has made it so; S behind a NAT with fully random
 * ports, reached through a router's relay. A proxied small request from A (`GET /mesh/<peer>/a2a/blob/small`, over
 * A's Unix socket as an agent on A's machine makes it) to B on the direct path and to S on the relayed one, the two
 * interleaved; and a bare TCP round trip between A's home and B's (two processes on a connection hole-punched the
 * same way, one byte echoed), measured in the same run: what the direct path adds to a request over the network's
 * own round trip.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Deferred, Duration, Effect, Logger, LogLevel } from "effect"
import * as Local from "../test/scale/LocalApi.js"
import * as NatLab from "../test/scale/NatLab.js"
import { poll } from "../test/scale/Requests.js"
import * as Topology from "../test/scale/Topology.js"
import type { Entry } from "./lib/report.js"
import { ms, percentile } from "./lib/stats.js"

const WARMUP = 20
const SAMPLES = 300
const PING_SAMPLES = 1000

const p50 = (xs: ReadonlyArray<number>) => percentile(xs, 0.5)

/** A process in `prefix`'s namespace running `script`; resolves with its first line of output. */
const process_ = (prefix: ReadonlyArray<string>, script: string, args: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const line = yield* Deferred.make<string>()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const [command = "", ...rest] = [...prefix, process.execPath, "-e", script, ...args]
        const child: ChildProcess = spawn(command, rest, { stdio: ["ignore", "pipe", "inherit"] })
        let text = ""
        child.stdout?.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8")
          const first = text.split("\n")[0]
          if (text.includes("\n") && first !== undefined) Deferred.unsafeDone(line, Effect.succeed(first))
        })
        return child
      }),
      (child) => Effect.sync(() => child.kill("SIGTERM")),
    )
    return yield* Deferred.await(line).pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => script }))
  })

const BLOB = [
  "const http = require('node:http')",
  "const server = http.createServer((req, res) => res.end(Buffer.alloc(64, 121)))",
  "server.listen(0, '127.0.0.1', () => console.log(server.address().port))",
].join("\n")

/**
 * One side of a bare hole-punched TCP connection: connects from `localPort` to `host:port` while the other side does
 * the same (the kernel's SYN retries cover the first SYNs the NATs drop). The pinger then times PING_SAMPLES one-byte
 * round trips and prints them as JSON; the echoer echoes.
 */
const BARE = [
  "const net = require('node:net')",
  "const [role, host, port, localPort, samples] = process.argv.slice(1)",
  "const s = net.connect({ host, port: +port, localPort: +localPort })",
  "s.setNoDelay(true)",
  "s.on('error', (e) => { console.log(JSON.stringify({ error: e.message })); process.exit(1) })",
  "if (role === 'echo') { s.on('connect', () => console.log('connected')); s.on('data', (d) => s.write(d)) }",
  "else s.on('connect', () => {",
  "  const out = []; let t = 0",
  "  const next = () => { if (out.length >= +samples) { console.log(JSON.stringify(out)); s.end(); return }",
  "    t = performance.now(); s.write('x') }",
  "  s.on('data', () => { out.push(performance.now() - t); next() })",
  "  setTimeout(next, 200)",
  "})",
].join("\n")

const config = (port: string) =>
  ["services:", `  - { name: blob, type: a2a, target_url: 'http://127.0.0.1:${port}' }`, ""].join("\n")

const timedCall = (from: Topology.Node, peer: string) =>
  Effect.gen(function* () {
    const started = performance.now()
    const answer = yield* Local.request(from, `/mesh/${peer}/a2a/blob/small`)
    if (answer.status !== 200) return yield* Effect.fail(new Error(`status ${answer.status}: ${answer.body}`))
    return performance.now() - started
  })

const pathsTo = (node: Topology.Node, peer: string) =>
  Local.json<{ peer?: { paths?: ReadonlyArray<string> } }>(node, `/debug/connectivity?peer=${peer}`).pipe(
    Effect.map((info) => info.peer?.paths ?? []),
    Effect.orElseSucceed((): ReadonlyArray<string> => []),
  )

const measure = Effect.gen(function* () {
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-bench-nat-"))),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
  )
  const lab = yield* NatLab.make(["cone", "cone", "symmetric"])
  const [homeA, homeB, homeS] = lab.homes
  if (homeA === undefined || homeB === undefined || homeS === undefined) return yield* Effect.dieMessage("3 homes")
  const { cp } = yield* NatLab.publicMesh(lab, folder)
  const [portB, portS] = yield* Effect.all([process_(homeB.prefix, BLOB), process_(homeS.prefix, BLOB)])
  const [a, b, s] = yield* Effect.all(
    [
      NatLab.member(cp, folder, homeA, "a"),
      NatLab.member(cp, folder, homeB, "b", { config: config(portB) }),
      NatLab.member(cp, folder, homeS, "s", { config: config(portS) }),
    ],
    { concurrency: "unbounded" },
  )
  const [, bId, sId] = yield* Effect.all(
    [a, b, s].map((n) => Topology.peerIdOf(n)),
    { concurrency: "unbounded" },
  )
  const retried = (peer: string) =>
    poll(Effect.either(timedCall(a, peer)), (r) => r._tag === "Right", {
      what: `a reaches ${peer}`,
      timeout: Duration.seconds(90),
      interval: Duration.millis(500),
    })
  yield* Effect.all([retried(bId as string), retried(sId as string)])
  yield* poll(pathsTo(a, bId as string), (p) => p.includes("direct"), {
    what: "A's path to B is direct",
    timeout: Duration.seconds(60),
    interval: Duration.millis(500),
  })
  const sPaths = yield* pathsTo(a, sId as string)
  if (sPaths.includes("direct")) return yield* Effect.dieMessage("A's path to S should be relayed")

  // The bare round trip between A's home and B's, on a connection punched through both NATs.
  const [portA0, portB0] = [41001, 41002]
  const [, pings] = yield* Effect.all(
    [
      process_(homeB.prefix, BARE, ["echo", homeA.nat.wan, String(portA0), String(portB0), "0"]),
      process_(homeA.prefix, BARE, ["ping", homeB.nat.wan, String(portB0), String(portA0), String(PING_SAMPLES)]),
    ],
    { concurrency: "unbounded" },
  )
  const bare = JSON.parse(pings) as Array<number>
  if (!Array.isArray(bare)) return yield* Effect.dieMessage(`bare round trips: ${pings}`)

  for (let i = 0; i < WARMUP; i++) yield* Effect.all([timedCall(a, bId as string), timedCall(a, sId as string)])
  const direct: Array<number> = []
  const relayed: Array<number> = []
  for (let i = 0; i < SAMPLES; i++) {
    direct.push(yield* timedCall(a, bId as string))
    relayed.push(yield* timedCall(a, sId as string))
  }
  const entries: ReadonlyArray<Entry> = [
    {
      name: "nat: proxied small request A→B, direct (hole-punched) path",
      figure: p50(direct),
      unit: "ms",
      baselineName: "the same request A→S over a router's relay",
      baseline: p50(relayed),
      ratio: p50(direct) / p50(relayed),
      notes: `p50s; direct ${ms(direct)}, relayed ${ms(relayed)} (n=${SAMPLES} each, interleaved)`,
    },
    {
      name: "nat: what the direct path adds over a bare TCP round trip between the homes",
      figure: p50(direct) - p50(bare),
      unit: "ms",
      baselineName: "a bare TCP round trip home A ↔ home B (one byte, hole-punched)",
      baseline: p50(bare),
      ratio: p50(direct) / p50(bare),
      notes: `ratio: the request's p50 in bare round trips; bare ${ms(bare)} (n=${bare.length})`,
    },
  ]
  return entries
})

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const why = NatLab.unavailable()
  if (why !== undefined) {
    return [
      {
        name: "nat: skipped",
        figure: Number.NaN,
        unit: "ms",
        baselineName: "none",
        baseline: Number.NaN,
        ratio: Number.NaN,
        notes: why,
      },
    ]
  }
  return Effect.runPromise(
    measure.pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Warning)) as Effect.Effect<ReadonlyArray<Entry>>,
  )
}

/**
 * `npx tsx bench/idle.ts [--nodes N] [--variants JSON]`: an idle node's weight, quicker than the scale harness: a
 * control plane, one router and N nodes of the built programs (`npx tsc -p tsconfig.build.json` first), each
 * publishing one service; once every service is discoverable, 30 s at rest, then each node's RSS, private memory
 * and CPU. `--variants '{"name": {"MESH_V8_FLAGS": "..."}}'` (`"@prefix"`: a command the node runs under) runs N nodes per variant in the same mesh, started
 * interleaved, so that variants are compared under the same machine conditions.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Duration, Effect } from "effect"
import * as DemoInference from "../src/demo/DemoInference.js"
import { poll } from "../test/scale/Requests.js"
import * as Topology from "../test/scale/Topology.js"
import * as Proc from "./scale/proc.js"
import { percentile } from "./scale/stats.js"

// Measured on the built programs, never their sources through tsx (support/processes.ts).
delete process.env.MESH_RUN_SOURCE
const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : undefined
}
const NODES = Number(flag("nodes") ?? 3)
const IDLE = Duration.seconds(Number(flag("idle") ?? 30))
const variants = Object.entries(
  JSON.parse(flag("variants") ?? '{"default": {}}') as Record<string, Record<string, string>>,
)

const program = Effect.gen(function* () {
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-idle-"))),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
  )
  const cp = yield* Topology.controlPlane({ folder, syncInterval: "10s" })
  const router = yield* Topology.router(cp, folder, "router-1", { syncInterval: "10s" })
  const backend = yield* DemoInference.make(0)
  const specs = Array.from({ length: NODES }, (_, i) => variants.map(([name, env], v) => ({ name, env, i, v }))).flat()
  const nodes = yield* Effect.forEach(
    specs,
    ({ env, i, v }) =>
      Topology.node(cp, folder, `node-${v}-${i}`, {
        syncInterval: "10s",
        env: Object.fromEntries(Object.entries(env).filter(([k]) => k !== "@prefix")),
        ...(env["@prefix"] === undefined ? {} : { prefix: env["@prefix"].split(" ") }),
        config: `services:\n  - { name: svc-${v}-${i}, type: inference, target_url: '${backend}' }\n`,
      }),
    { concurrency: "unbounded" },
  )
  const ids = yield* Effect.forEach(nodes, (node) => Topology.peerIdOf(node), { concurrency: "unbounded" })
  yield* Effect.forEach(
    nodes,
    (_, i) =>
      poll(
        Topology.discover(
          nodes[(i + 1) % nodes.length] as Topology.Node,
          "inference",
          `svc-${specs[i]?.v}-${specs[i]?.i}`,
        ),
        (p) => p.includes(ids[i] ?? ""),
        { what: "discoverable", timeout: Duration.minutes(2), interval: Duration.millis(500) },
      ),
    { concurrency: 2 },
  )
  const pids = yield* Effect.forEach(nodes, (node) => node.pid)
  const cpuBefore = yield* Effect.forEach(pids, Proc.cpuSeconds)
  yield* Effect.sleep(IDLE)
  const cpuAfter = yield* Effect.forEach(pids, Proc.cpuSeconds)
  const rss = yield* Effect.forEach(pids, Proc.rssMiB)
  const priv = yield* Effect.forEach(pids, Proc.privateMiB)
  const routerRss = yield* Effect.flatMap(router.pid, Proc.rssMiB)
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
  process.stdout.write(`load ${load}; router RSS ${routerRss.toFixed(0)} MiB; pids ${pids.join(" ")}\n`)
  for (const [name] of variants) {
    const mine = specs.flatMap((s, i) => (s.name === name ? [i] : []))
    const pick = (xs: ReadonlyArray<number>) => mine.map((i) => xs[i] ?? 0)
    const cpu = mine.map((i) => (((cpuAfter[i] ?? 0) - (cpuBefore[i] ?? 0)) / Duration.toSeconds(IDLE)) * 100)
    process.stdout.write(
      `${name}: RSS p50 ${percentile(pick(rss), 50).toFixed(1)} MiB [${pick(rss)
        .map((x) => x.toFixed(0))
        .join(" ")}], ` +
        `private p50 ${percentile(pick(priv), 50).toFixed(1)} MiB, CPU p50 ${percentile(cpu, 50).toFixed(2)} %\n`,
    )
  }
  if (flag("hold") !== undefined) yield* Effect.sleep(Duration.seconds(Number(flag("hold"))))
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error}\n`)
    process.exit(1)
  },
)

/**
 * `npm run scale [-- --nodes N] [-- --out file] [-- --nat cone|symmetric|mixed --homes H]`: a control plane,
 * 2 routers and N nodes (default 24), each node a process of the built programs publishing one model service, measured as an operator would: time until all are
 * members, discovery latency, recovery after router kills, ban propagation, calls per second across random pairs,
 * idle weight per node and per router peer, and control-plane requests per node at rest. Prints a table and writes
 * JSON. Not part of `npm test`: it takes minutes and the whole machine. Random choices use a fixed seed.
 *
 * With `--nat`, the mesh runs in the NAT lab (test/scale/NatLab.ts, root only): the control plane and the routers on
 * its public segment, the nodes spread over H homes (default 3) behind NATs of that kind (`mixed`: cone and
 * symmetric in turn), each home with its own model backend; everything between nodes of different homes then runs
 * through a router's relay unless a direct path is made.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Duration, Effect } from "effect"
import * as DemoInference from "../../src/demo/DemoInference.js"
import { demoServers } from "../../test/scale/DemoProcess.js"
import * as DhtProbe from "../../test/scale/DhtProbe.js"
import * as Local from "../../test/scale/LocalApi.js"
import * as NatLab from "../../test/scale/NatLab.js"
import { admin, poll } from "../../test/scale/Requests.js"
import * as Topology from "../../test/scale/Topology.js"
import * as Proc from "./proc.js"
import { percentile, seeded } from "./stats.js"

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : undefined
}
const NODES = Number(flag("nodes") ?? 24)
const NAT = flag("nat")
if (NAT !== undefined && !["cone", "symmetric", "mixed"].includes(NAT)) {
  throw new Error("--nat is cone, symmetric or mixed")
}
const HOMES = Number(flag("homes") ?? 3)
const OUT =
  flag("out") ?? join(import.meta.dirname, "..", "results", NAT === undefined ? "scale.json" : `scale-nat-${NAT}.json`)
const SYNC = "10s"
const KILLS = 5
const BANS = 5
const DISCOVERY_SAMPLES = 60
const CALL_SECONDS = 10
const CALL_CONCURRENCY = 8
const IDLE_WINDOW = Duration.seconds(30)
const CP_WINDOW = Duration.seconds(60)

const random = seeded(24)
const VICTIM_SEED = 5
const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)] as A
const seconds = (ms: number) => Math.round(ms) / 1000

const serviceName = (i: number) => `svc-${i}`

/** Milliseconds until `check` holds, polling every 100 ms; Infinity past `limitMs`. */
const timeUntil = (check: Effect.Effect<boolean>, limitMs: number) =>
  Effect.gen(function* () {
    const started = Date.now()
    while (Date.now() - started < limitMs) {
      if (yield* check) return Date.now() - started
      yield* Effect.sleep(Duration.millis(100))
    }
    return Number.POSITIVE_INFINITY
  })

const cpRequests = (cp: { url: string }) =>
  Effect.promise(() =>
    fetch(`${cp.url}/metrics`)
      .then((r) => r.text())
      .then((text) =>
        text
          .split("\n")
          .filter((line) => line.startsWith("mesh_control_plane_http_requests_total{"))
          .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0),
      ),
  )

const routerPeers = (router: Topology.Router) =>
  Effect.promise(() =>
    fetch(`${router.metricsUrl}/metrics`)
      .then((r) => r.text())
      .then((text) => Number(/^mesh_router_connected_peers(?:\{\})? (\d+)/m.exec(text)?.[1] ?? 0)),
  )

const program = Effect.gen(function* () {
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-scale-"))),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
  )
  const log = (line: string) => Effect.sync(() => process.stdout.write(`${line}\n`))
  const where =
    NAT === undefined ? "" : `, behind ${HOMES} ${NAT === "mixed" ? "cone and symmetric" : NAT} NATs (the NAT lab)`
  yield* log(`scale: control plane, 2 routers, ${NODES} nodes (built programs)${where}, sync every ${SYNC}`)
  const lab =
    NAT === undefined
      ? undefined
      : yield* NatLab.make(
          Array.from(
            { length: HOMES },
            (_, i): NatLab.NatKind =>
              NAT === "mixed" ? (i % 2 === 0 ? "cone" : "symmetric") : (NAT as NatLab.NatKind),
          ),
        )
  const { cp, routers } =
    lab === undefined
      ? yield* Effect.gen(function* () {
          const cp = yield* Topology.controlPlane({ folder, syncInterval: SYNC })
          const routers = yield* Effect.all(
            [
              Topology.router(cp, folder, "router-1", { syncInterval: SYNC }),
              Topology.router(cp, folder, "router-2", { syncInterval: SYNC }),
            ],
            { concurrency: "unbounded" },
          )
          return { cp, routers }
        })
      : yield* NatLab.publicMesh(lab, folder, { syncInterval: SYNC })
  // V8 gives back the heap grown while loading only after a while: the base is read once the routers settled.
  yield* Effect.sleep(Duration.seconds(30))
  const routerBase = yield* Effect.forEach(routers, (r) => Effect.flatMap(r.pid, (pid) => Proc.rssMiB(pid)))
  // One model backend where the nodes can reach it: this process's loopback, or each home.
  const backends =
    lab === undefined
      ? [yield* DemoInference.make(0)]
      : yield* Effect.forEach(lab.homes, (home) => Effect.map(demoServers(home.prefix), (urls) => urls.inference))
  const homeOf = (i: number) => (lab === undefined ? undefined : lab.homes[i % lab.homes.length])
  const backendOf = (i: number) => backends[i % backends.length] as string

  // 1. Until every node is a member.
  const joinStarted = Date.now()
  const nodes = yield* Effect.forEach(
    Array.from({ length: NODES }, (_, i) => i),
    (i) => {
      const options = {
        syncInterval: SYNC,
        config: `services:\n  - { name: ${serviceName(i)}, type: inference, target_url: '${backendOf(i)}' }\n`,
      }
      const home = homeOf(i)
      return home === undefined
        ? Topology.node(cp, folder, `node-${i}`, options)
        : NatLab.member(cp, folder, home, `node-${i}`, options)
    },
    { concurrency: "unbounded" },
  )
  const ids = yield* Effect.forEach(nodes, (node) => Topology.peerIdOf(node, Duration.minutes(5)), {
    concurrency: "unbounded",
  })
  const allMembersMs = Date.now() - joinStarted
  yield* log(`all ${NODES} members after ${seconds(allMembersMs)} s`)
  // A service nobody finds: what its node says of its routers and records, and what each router names alone.
  const undiscovered = (node: Topology.Node, i: number) =>
    Effect.gen(function* () {
      // The probe is a host of this process, outside the lab, where the routers' public addresses lead nowhere.
      const probe = lab === undefined ? yield* DhtProbe.make(cp) : undefined
      const addresses = yield* Effect.map(
        Local.json<{ routers?: ReadonlyArray<{ address: string }> }>(
          nodes[(i + 1) % NODES] as Topology.Node,
          "/debug/connectivity",
        ),
        (info) => (info.routers ?? []).map((r) => r.address),
      )
      if (probe !== undefined) {
        for (const address of addresses) {
          yield* log(`${address} alone on ${serviceName(i)}: ${yield* probe.ask(address, "inference", serviceName(i))}`)
        }
      }
      const links = yield* Local.request(node, "/debug/connectivity").pipe(
        Effect.map((answer) => answer.body.slice(0, 1_500)),
        Effect.orElseSucceed(() => "no answer"),
      )
      yield* log(`${node.name} connectivity: ${links}`)
      // The asker's side: its connection to the provider, and the same search given 10 s.
      const asker = nodes[(i + 1) % NODES] as Topology.Node
      const toProvider = yield* Local.request(asker, `/debug/connectivity?peer=${ids[i] ?? ""}`).pipe(
        Effect.map((answer) => answer.body.slice(0, 1_500)),
        Effect.orElseSucceed(() => "no answer"),
      )
      yield* log(`${asker.name} to ${node.name}: ${toProvider}`)
      const slow = yield* Topology.discover(asker, "inference", serviceName(i), "10s")
      yield* log(`${asker.name} searching ${serviceName(i)} for 10 s finds: ${slow.join(", ") || "nothing"}`)
      const lines = (yield* node.output)
        .split("\n")
        .filter((line) => /provider|router|announce|publish|probe|WARN|ERROR/.test(line))
      yield* log(`${node.name} says:\n${lines.slice(-25).join("\n") || "nothing logged"}`)
    }).pipe(Effect.ignore)
  // Every service discoverable before measuring: the mesh has settled.
  yield* Effect.forEach(
    nodes,
    (_, i) =>
      poll(
        // Discovery leaves a node's own services out: each service is looked up from the next node.
        Topology.discover(nodes[(i + 1) % NODES] as Topology.Node, "inference", serviceName(i)),
        (p) => p.includes(ids[i] ?? ""),
        {
          what: `${serviceName(i)} discoverable`,
          timeout: Duration.minutes(3),
          interval: Duration.millis(500),
        },
      ).pipe(Effect.tapError(() => undiscovered(nodes[i] as Topology.Node, i))),
    { concurrency: 4 },
  )
  const settledMs = Date.now() - joinStarted

  // 2. Discovery latency: a random service from a random node, one at a time.
  const discoveries: Array<number> = []
  for (let n = 0; n < DISCOVERY_SAMPLES; n++) {
    const from = Math.floor(random() * NODES)
    let to = Math.floor(random() * NODES)
    if (to === from) to = (to + 1) % NODES
    const started = performance.now()
    const found = yield* Topology.discover(nodes[from] as Topology.Node, "inference", serviceName(to), "5s")
    discoveries.push(found.includes(ids[to] ?? "") ? performance.now() - started : Number.POSITIVE_INFINITY)
  }
  yield* log(`discovery p50 ${percentile(discoveries, 50).toFixed(1)} ms`)

  // 3. Idle weight, before anything else disturbs the mesh.
  yield* Effect.sleep(Duration.seconds(10))
  const nodePids = yield* Effect.forEach(nodes, (node) => node.pid)
  const routerPids = yield* Effect.forEach(routers, (router) => router.pid)
  const cpuBefore = yield* Effect.forEach([...nodePids, ...routerPids], Proc.cpuSeconds)
  const cpBefore = yield* cpRequests(cp)
  yield* Effect.sleep(IDLE_WINDOW)
  const cpuAfter = yield* Effect.forEach([...nodePids, ...routerPids], Proc.cpuSeconds)
  yield* Effect.sleep(Duration.subtract(CP_WINDOW, IDLE_WINDOW))
  const cpAfter = yield* cpRequests(cp)
  const cpuPercent = cpuAfter.map((after, i) => ((after - (cpuBefore[i] ?? 0)) / Duration.toSeconds(IDLE_WINDOW)) * 100)
  const nodeRss = yield* Effect.forEach(nodePids, Proc.rssMiB)
  const nodePrivate = yield* Effect.forEach(nodePids, Proc.privateMiB)
  const routerRss = yield* Effect.forEach(routerPids, Proc.rssMiB)
  const peers = yield* Effect.forEach(routers, routerPeers)
  const perPeer = routerRss.map((rss, i) => (rss - (routerBase[i] ?? 0)) / Math.max(1, peers[i] ?? 0))
  const cpPerNodeMinute = (cpAfter - cpBefore) / (NODES + routers.length) / (Duration.toSeconds(CP_WINDOW) / 60)

  // 4. Calls per second across random pairs, through the proxy.
  let calls = 0
  let failedCalls = 0
  /** What the first failed call answered, for the operator reading the table (0: no answer at all). */
  let firstFailure: string | undefined
  const until = Date.now() + CALL_SECONDS * 1000
  yield* Effect.all(
    Array.from({ length: CALL_CONCURRENCY }, () =>
      Effect.gen(function* () {
        while (Date.now() < until) {
          const from = Math.floor(random() * NODES)
          let to = Math.floor(random() * NODES)
          if (to === from) to = (to + 1) % NODES
          const answer = yield* Local.request(
            nodes[from] as Topology.Node,
            `/mesh/${ids[to]}/inference/${serviceName(to)}/v1/models`,
          ).pipe(Effect.orElseSucceed(() => ({ status: 0, body: "" })))
          if (answer.status === 200) calls++
          else {
            failedCalls++
            firstFailure ??= `${answer.status} ${answer.body.slice(0, 160)}`.trim()
          }
        }
      }),
    ),
    { concurrency: "unbounded" },
  )
  const callsPerSecond = calls / CALL_SECONDS

  // 5. Router kills: one router killed, every service discoverable again (from a random node each), router back.
  const recoveries: Array<number> = []
  const restarts: Array<{ relinkedMs: number; survivorRecordsMs: number }> = []
  // Not in the NAT lab: the probe is a host of this process, outside the lab, where the routers' public addresses
  // lead nowhere (and must not be dialled).
  const probe = lab === undefined ? yield* DhtProbe.make(cp) : undefined
  const routerAddresses = yield* Effect.map(
    Local.json<{ routers?: ReadonlyArray<{ address: string }> }>(nodes[0] as Topology.Node, "/debug/connectivity"),
    (info) => (info.routers ?? []).map((r) => r.address),
  )
  yield* log(`router addresses: ${routerAddresses.join(" ")}`)
  for (let k = 0; k < KILLS; k++) {
    const router = routers[k % routers.length] as Topology.Router
    const survivor = routers[(k + 1) % routers.length] as Topology.Router
    const survivorAddress = routerAddresses.find((a) => a.includes(`/tcp/${survivor.port}/`)) ?? ""
    yield* router.stop
    const times = yield* Effect.forEach(
      nodes,
      (_, i) =>
        timeUntil(
          Effect.map(Topology.discover(pick(nodes.filter((_, j) => j !== i)), "inference", serviceName(i)), (p) =>
            p.includes(ids[i] ?? ""),
          ),
          30_000,
        ),
      { concurrency: 8 },
    )
    recoveries.push(Math.max(...times))
    // The other router is now the whole DHT (from the second kill on, it is the one restarted at the previous kill):
    // asked alone, without gossip, it must name every provider.
    const started = Date.now()
    const named = new Set<number>()
    while (probe !== undefined && named.size < NODES && Date.now() - started < 30_000) {
      const found = yield* Effect.forEach(
        nodes.map((_, i) => i).filter((i) => !named.has(i)),
        (i) =>
          Effect.map(probe.providers([survivorAddress], "inference", serviceName(i)), (p) =>
            p.has(ids[i] ?? "") ? i : -1,
          ),
        { concurrency: 8 },
      )
      for (const i of found) if (i >= 0) named.add(i)
    }
    // Each service counts from its first answer: one slow query must not send the whole round back to the start.
    const held =
      probe === undefined ? Number.NaN : named.size === NODES ? Date.now() - started : Number.POSITIVE_INFINITY
    const unnamed = nodes.flatMap((node, i) => (named.has(i) ? [] : [node]))
    if (probe !== undefined && unnamed.length > 0) {
      yield* log(`${survivor.name} does not name: ${unnamed.map((node) => node.name).join(", ")}`)
      const first = unnamed[0] as Topology.Node
      // Slow or absent: the same question with 10 s to answer instead of 2.
      const slow = yield* probe.providers(
        [survivorAddress],
        "inference",
        serviceName(nodes.indexOf(first)),
        Duration.seconds(10),
      )
      const firstId = ids[nodes.indexOf(first)] ?? ""
      const raw = yield* probe.ask(survivorAddress, "inference", serviceName(nodes.indexOf(first)))
      yield* log(`${survivor.name} asked alone for ${first.name} (${firstId}): ${raw}`)
      const trace = yield* probe.explain(routerAddresses, "inference", serviceName(nodes.indexOf(first)))
      yield* log(`search for ${first.name}: ${trace}`)
      const routerLines = (yield* survivor.output).split("\n").filter((line) => line.includes(firstId))
      if (routerLines.length > 0) yield* log(`${survivor.name} on ${first.name}: ${routerLines.slice(-6).join(" | ")}`)
      yield* log(
        `${first.name} asked again with 10 s: ${slow.has(ids[nodes.indexOf(first)] ?? "") ? "named" : "not named"}`,
      )
      const lines = (yield* first.output)
        .split("\n")
        .filter((line) => line.includes("provider record") || line.includes("router"))
      yield* log(`${first.name} on its records: ${lines.slice(-12).join("\n") || "nothing logged"}`)
    }
    // Back on the same port and data folder: every node linked to it again.
    yield* router.start
    const relinked = yield* timeUntil(
      Effect.map(routerPeers(router), (n) => n >= NODES),
      120_000,
    )
    restarts.push({ relinkedMs: relinked, survivorRecordsMs: held })
    if (!Number.isFinite(relinked) || (probe !== undefined && !Number.isFinite(held))) {
      // What the first node says of its router links, for the operator reading a failed round.
      const links = yield* Local.request(nodes[0] as Topology.Node, "/debug/connectivity").pipe(
        Effect.map((answer) => answer.body),
        Effect.orElseSucceed(() => "no answer"),
      )
      yield* log(`node-0 router links: ${links.slice(0, 2_000)}`)
    }
    yield* log(
      `kill ${k + 1} (${router.name}): discoverable ${seconds(recoveries.at(-1) ?? 0)} s; ${survivor.name} alone names every provider ${seconds(held)} s; back and linked ${seconds(relinked)} s`,
    )
  }

  // 6. Bans: a random node banned; time until every other node refuses it; then unbanned and back.
  const bans: Array<number> = []
  // Drawn from a seed of their own: the main draw's position here depends on the retries before, and runs of two
  // builds should ban the same nodes.
  const drawVictim = seeded(VICTIM_SEED)
  for (let b = 0; b < BANS; b++) {
    const victim = 1 + Math.floor(drawVictim() * (NODES - 1))
    const id = ids[victim] ?? ""
    const started = Date.now()
    yield* admin(cp, "POST", "/admin/revoke", { peer_id: id })
    const answeredMs = Date.now() - started
    // A node that knows of the ban refuses a proxied call to the banned peer, naming the ban. The last answer
    // each node gave is kept, to say what a late node answered instead.
    const lastAnswers = new Map<string, string>()
    const refusals = yield* Effect.forEach(
      nodes.filter((_, i) => i !== victim),
      (node) =>
        timeUntil(
          Effect.map(Local.request(node, `/mesh/${id}/inference/${serviceName(victim)}/v1/models`), (answer) => {
            lastAnswers.set(node.name, `${answer.status} ${answer.body.slice(0, 200)}`)
            return answer.body.includes("banned")
          }).pipe(
            // A call that hangs on a peer going away must not hide the moment the node learns of the ban.
            Effect.timeoutTo({
              duration: Duration.seconds(1),
              onSuccess: (refused) => refused,
              onTimeout: () => {
                lastAnswers.set(node.name, "no answer within 1 s")
                return false
              },
            }),
            Effect.catchAll((error) =>
              Effect.sync(() => {
                lastAnswers.set(node.name, `failed: ${error.message.slice(0, 300)}`)
                return false
              }),
            ),
          ),
          60_000,
        ),
      { concurrency: "unbounded" },
    )
    bans.push(...refusals.map((ms) => ms + answeredMs))
    const late = refusals.flatMap((ms, i) => (ms + answeredMs > 3_000 ? [`node-${i >= victim ? i + 1 : i}`] : []))
    yield* log(
      `ban ${b + 1} (node-${victim}): answered ${answeredMs} ms; every node ${seconds(Math.max(...refusals) + answeredMs)} s; later than 3 s: ${late.join(", ") || "none"}`,
    )
    const firstLate = nodes.find((node) => node.name === late[0])
    if (firstLate !== undefined) {
      // What the late node made of the mesh events it received: none arrived, or they were refused.
      const metrics = yield* Local.request(firstLate, "/metrics").pipe(
        Effect.map((answer) => answer.body),
        Effect.orElseSucceed(() => ""),
      )
      const events = metrics.split("\n").filter((line) => line.includes("mesh_events_total{"))
      const output = (yield* firstLate.output)
        .split("\n")
        .filter((line) => line.includes("mesh event") || line.includes("sync") || line.includes("router"))
      yield* log(`${firstLate.name}: ${events.join("; ") || "no mesh event counted"}; ${output.slice(-8).join(" | ")}`)
      // A process that died answers nothing at all: its last words are the tail of its output.
      const pid = yield* firstLate.pid
      const alive = pid > 0 && Effect.runSync(Effect.isSuccess(Effect.try(() => process.kill(pid, 0))))
      const tail = (yield* firstLate.output).trimEnd().split("\n").slice(-60).join("\n")
      yield* log(`${firstLate.name} (pid ${pid}) ${alive ? "is running" : "is not running"}; its last lines: ${tail}`)
      yield* log(
        `late nodes answered: ${late.map((name) => `${name}: ${lastAnswers.get(name) ?? "nothing"}`).join(" | ")}`,
      )
    }
    yield* admin(cp, "POST", `/admin/nodes/${id}/unban`)
    yield* poll(
      Local.json<{ connected?: boolean }>(nodes[victim] as Topology.Node, "/debug/connectivity").pipe(
        Effect.orElseSucceed(() => ({}) as { connected?: boolean }),
      ),
      (info) => info.connected === true,
      { what: "the unbanned node is back", timeout: Duration.minutes(2), interval: Duration.millis(500) },
    )
  }

  const rows: Array<readonly [string, string, string]> = [
    ["nodes / routers", `${NODES} / ${routers.length}${where}`, ""],
    ["all members", `${seconds(allMembersMs)} s`, "≤ 60 s"],
    ["every service discoverable", `${seconds(settledMs)} s`, ""],
    [
      "discovery, random service from random node",
      `p50 ${percentile(discoveries, 50).toFixed(0)} ms, p99 ${percentile(discoveries, 99).toFixed(0)} ms`,
      "p99 ≤ 1 s",
    ],
    [
      `router kill → every service discoverable (${KILLS} kills)`,
      `p50 ${seconds(percentile(recoveries, 50))} s, p99 ${seconds(percentile(recoveries, 99))} s`,
      "p99 ≤ 10 s",
    ],
    [
      `router restart → every node linked again (${KILLS} restarts)`,
      `p50 ${seconds(
        percentile(
          restarts.map((r) => r.relinkedMs),
          50,
        ),
      )} s, p99 ${seconds(
        percentile(
          restarts.map((r) => r.relinkedMs),
          99,
        ),
      )} s`,
      "p99 ≤ 10 s",
    ],
    [
      "router killed → the other alone names every provider (DHT only)",
      `p50 ${seconds(
        percentile(
          restarts.map((r) => r.survivorRecordsMs),
          50,
        ),
      )} s, p99 ${seconds(
        percentile(
          restarts.map((r) => r.survivorRecordsMs),
          99,
        ),
      )} s`,
      "p99 ≤ 10 s",
    ],
    [
      `ban → refused by every node (${BANS} bans)`,
      `p50 ${seconds(percentile(bans, 50))} s, p99 ${seconds(percentile(bans, 99))} s`,
      "p99 ≤ 5 s",
    ],
    [
      "calls/s across random pairs (proxy)",
      `${callsPerSecond.toFixed(0)} (${failedCalls} failed${firstFailure === undefined ? "" : `, the first: ${firstFailure}`})`,
      "",
    ],
    [
      "idle node RSS",
      `p50 ${percentile(nodeRss, 50).toFixed(0)} MiB, max ${Math.max(...nodeRss).toFixed(0)} MiB`,
      "≤ 120 MiB",
    ],
    [
      "idle node private memory (RSS less shared code pages)",
      `p50 ${percentile(nodePrivate, 50).toFixed(0)} MiB, max ${Math.max(...nodePrivate).toFixed(0)} MiB`,
      "",
    ],
    [
      "idle node CPU",
      `p50 ${percentile(cpuPercent.slice(0, NODES), 50).toFixed(2)} %, max ${Math.max(...cpuPercent.slice(0, NODES)).toFixed(2)} %`,
      "",
    ],
    ["router RSS idle base", routerBase.map((m) => `${m.toFixed(0)} MiB`).join(", "), ""],
    ["router RSS with peers", routerRss.map((m, i) => `${m.toFixed(0)} MiB (${peers[i]} peers)`).join(", "), ""],
    ["router RSS per peer beyond base", perPeer.map((m) => `${m.toFixed(2)} MiB`).join(", "), "≤ 2 MiB"],
    [
      "router CPU idle",
      cpuPercent
        .slice(NODES)
        .map((c) => `${c.toFixed(2)} %`)
        .join(", "),
      "",
    ],
    ["control-plane requests per member per minute at rest", cpPerNodeMinute.toFixed(2), ""],
  ]
  const width = Math.max(...rows.map((r) => r[0].length))
  yield* log(
    `\n${rows.map(([what, value, goal]) => `${what.padEnd(width)}  ${value}${goal ? `  (goal ${goal})` : ""}`).join("\n")}`,
  )
  // A clean clone has no results folder.
  mkdirSync(dirname(OUT), { recursive: true })
  writeFileSync(
    OUT,
    `${JSON.stringify(
      {
        nodes: NODES,
        routers: routers.length,
        ...(NAT === undefined ? {} : { nat: NAT, homes: HOMES }),
        syncInterval: SYNC,
        allMembersMs,
        settledMs,
        discoveryMs: { p50: percentile(discoveries, 50), p99: percentile(discoveries, 99) },
        routerKillRecoveryMs: { p50: percentile(recoveries, 50), p99: percentile(recoveries, 99), all: recoveries },
        routerRestarts: restarts,
        banMs: { p50: percentile(bans, 50), p99: percentile(bans, 99) },
        callsPerSecond,
        failedCalls,
        nodeRssMiB: { p50: percentile(nodeRss, 50), max: Math.max(...nodeRss) },
        nodePrivateMiB: { p50: percentile(nodePrivate, 50), max: Math.max(...nodePrivate) },
        nodeCpuPercent: { p50: percentile(cpuPercent.slice(0, NODES), 50) },
        routerBaseRssMiB: routerBase,
        routerRssMiB: routerRss,
        routerPeers: peers,
        routerRssPerPeerMiB: perPeer,
        controlPlaneRequestsPerMemberMinute: cpPerNodeMinute,
      },
      null,
      2,
    )}\n`,
  )
  yield* log(`\nwritten to ${OUT}`)
})

// Measured on the built programs, never their sources through tsx (support/processes.ts).
delete process.env.MESH_RUN_SOURCE
Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`scale run failed: ${String(error)}\n`)
    process.exit(1)
  },
)

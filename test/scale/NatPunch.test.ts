/**
 * Direct paths between members behind NAT (issue 51), in the NAT lab (NatLab.ts): three homes behind cone-like NATs
 * with two members each, and one home behind a NAT with fully random ports (symmetric). Every member serves a small
 * HTTP service (`blob`) from its home, reached by the others through their proxy.
 *
 * - Every pair of the six cone-NAT members talks once through the relay, then is direct within 60 s (the matrix is
 *   printed): members in different homes by hole punching, members of one home by dialling each other.
 * - A 20 MiB answer from B to A crosses the routers with less than 1 MiB (their `mesh_router_relayed_bytes_total`).
 * - The member behind the symmetric NAT stays relayed: its metric says so, and its last punch says why.
 * - Router 1 killed while A calls B over the direct path: no call fails.
 *
 * Separate processes in real time: two minutes or so, hence test/scale/.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Schedule } from "effect"
import * as Local from "./LocalApi.js"
import * as NatLab from "./NatLab.js"
import { poll } from "./Requests.js"
import * as Topology from "./Topology.js"

const why = NatLab.unavailable()
if (why !== undefined) console.log(`NAT punch tests skipped: ${why}`)

const BIG = 20 * 1024 * 1024

/** A small HTTP server in a home: `/small` answers 64 bytes, `/big` 20 MiB. Its port, as the home sees it. */
const blobServer = (prefix: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const port = yield* Deferred.make<number>()
    const script = [
      "const http = require('node:http')",
      `const big = Buffer.alloc(${BIG}, 120)`,
      "const server = http.createServer((req, res) => {",
      "  const body = req.url.endsWith('/big') ? big : Buffer.alloc(64, 121)",
      "  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })",
      "  res.end(body)",
      "})",
      "server.listen(0, '127.0.0.1', () => console.log(server.address().port))",
    ].join("\n")
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const [command = "", ...args] = [...prefix, process.execPath, "-e", script]
        const child: ChildProcess = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] })
        child.stdout?.once("data", (chunk: Buffer) => Deferred.unsafeDone(port, Effect.succeed(Number(String(chunk)))))
        return child
      }),
      (child) => Effect.sync(() => child.kill("SIGTERM")),
    )
    return yield* Deferred.await(port).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => "blob" }))
  })

const config = (port: number) =>
  ["services:", `  - { name: blob, type: a2a, target_url: 'http://127.0.0.1:${port}' }`, ""].join("\n")

/** The body's length of `path` on the peer's blob service through the member's proxy; fails on any other status. */
const call = (from: Topology.Node, peer: string, path: "small" | "big") =>
  Local.request(from, `/mesh/${peer}/a2a/blob/${path}`).pipe(
    Effect.flatMap((answer) =>
      answer.status === 200
        ? Effect.succeed(answer.body.length)
        : Effect.fail(new Error(`status ${answer.status}: ${answer.body.slice(0, 200)}`)),
    ),
  )

const pathsTo = (node: Topology.Node, peer: string) =>
  Local.json<{ peer?: { paths?: ReadonlyArray<string> } }>(node, `/debug/connectivity?peer=${peer}`).pipe(
    Effect.map((info) => info.peer?.paths ?? []),
    Effect.orElseSucceed((): ReadonlyArray<string> => []),
  )

/** A gauge or counter's value from a Prometheus text page, summed over the lines that match. */
const metric = (page: string, name: string, labels = "") =>
  page
    .split("\n")
    .filter((line) => line.startsWith(name) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0)

const routerRelayed = (routers: ReadonlyArray<Topology.Router>) =>
  Effect.forEach(routers, (r) =>
    Effect.tryPromise(() => fetch(`${r.metricsUrl}/metrics`).then((res) => res.text())).pipe(
      Effect.map((page) => metric(page, "mesh_router_relayed_bytes_total")),
      Effect.orElseSucceed(() => 0),
    ),
  ).pipe(Effect.map((all) => all.reduce((a, b) => a + b, 0)))

describe.skipIf(why !== undefined)("members behind NAT get direct paths", () => {
  it.scopedLive(
    "cone NATs: every pair direct, big answers bypass the routers, router loss costs no call; symmetric: relayed",
    () =>
      Effect.gen(function* () {
        const folder = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-nat-punch-"))),
          (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
        )
        const lab = yield* NatLab.make(["cone", "cone", "cone", "symmetric"])
        const { cp, routers } = yield* NatLab.publicMesh(lab, folder)
        const ports = yield* Effect.forEach(lab.homes, (home) => blobServer(home.prefix), { concurrency: "unbounded" })
        const members = yield* Effect.forEach(
          lab.homes.flatMap((home, h) =>
            (home.nat.kind === "cone" ? [0, 1] : [0]).map((m) => ({ home, name: `h${h + 1}m${m + 1}`, h })),
          ),
          ({ home, name, h }) =>
            NatLab.member(cp, folder, home, name, {
              config: config(ports[h] as number),
              extraArgs: ["--max-response-bytes", String(BIG + 1024 * 1024)],
            }).pipe(Effect.map((node) => ({ node, home, name }))),
          { concurrency: "unbounded" },
        )
        const ids = yield* Effect.forEach(members, ({ node }) => Topology.peerIdOf(node), { concurrency: "unbounded" })
        const cone = members.flatMap((m, i) => (m.home.nat.kind === "cone" ? [{ ...m, id: ids[i] as string }] : []))
        const symmetric = members.flatMap((m, i) =>
          m.home.nat.kind === "symmetric" ? [{ ...m, id: ids[i] as string }] : [],
        )

        yield* Effect.forEach(
          members,
          ({ node }) =>
            poll(
              Local.json<{ connected?: boolean }>(node, "/debug/connectivity").pipe(
                Effect.orElseSucceed(() => ({ connected: false })),
              ),
              (info) => info.connected === true,
              {
                what: `${node.name} is connected to a router`,
                timeout: Duration.seconds(60),
                interval: Duration.millis(250),
              },
            ).pipe(
              Effect.tapError(() =>
                Effect.flatMap(node.output, (out) => Effect.logError(`${node.name} output:\n${out.slice(-4_000)}`)),
              ),
            ),
          { concurrency: "unbounded" },
        )
        console.log(`${members.length} members connected`)

        // Each pair talks once, through whatever path the mesh has (a relay at first).
        const pairs = cone.flatMap((a, i) => cone.slice(i + 1).map((b) => [a, b] as const))
        // (Retried: a member's relay slot may come some seconds after its router link.)
        yield* Effect.forEach(
          pairs,
          ([a, b]) =>
            call(a.node, b.id, "small").pipe(
              Effect.retry(Schedule.spaced("1 second").pipe(Schedule.upTo("60 seconds"))),
            ),
          { concurrency: 4 },
        )
        console.log(`${pairs.length} pairs talked`)
        const formed = Date.now()

        // Within 60 s no pair is left on a relay: each is direct, or was made direct and has closed since ("d": its
        // last attempt made it direct and it has no connection now; a later call connects it again, see below).
        const cell = (a: (typeof cone)[number], b: (typeof cone)[number]) =>
          Local.json<{ peer?: { paths?: ReadonlyArray<string>; hole_punch?: { result?: string } | null } }>(
            a.node,
            `/debug/connectivity?peer=${b.id}`,
          ).pipe(
            Effect.map(({ peer }) => {
              const paths = peer?.paths ?? []
              if (paths.includes("direct")) return "D"
              return paths.length === 0 && peer?.hole_punch?.result === "direct" ? "d" : "R"
            }),
            Effect.orElseSucceed(() => "R"),
          )
        const matrix = Effect.forEach(cone, (a) =>
          Effect.forEach(cone, (b) => (a === b ? Effect.succeed("·") : cell(a, b))),
        )
        const final = yield* poll(matrix, (rows) => rows.every((row) => row.every((cell) => cell !== "R")), {
          what: "every pair of cone-NAT members is direct",
          timeout: Duration.seconds(60),
          interval: Duration.seconds(1),
        }).pipe(Effect.catchAll(() => matrix))
        console.log(
          `paths ${Math.round((Date.now() - formed) / 1000)} s after every pair talked (D direct, d made direct and closed since, R relayed):\n` +
            cone.map((a, i) => `${a.name.padEnd(5)} ${(final[i] ?? []).join(" ")}`).join("\n"),
        )
        const stuck = pairs.find(([x, y]) => final[cone.indexOf(x)]?.[cone.indexOf(y)] === "R")
        if (stuck !== undefined) {
          for (const [x, y] of [stuck, [stuck[1], stuck[0]] as const]) {
            const view = yield* Local.request(x.node, `/debug/connectivity?peer=${y.id}`)
            console.log(`${x.name} → ${y.name}: ${view.body}`)
          }
        }
        expect(final.flat().filter((cell) => cell === "R")).toEqual([])

        // A 20 MiB answer from B (another home) to A barely touches the routers.
        const [a, b] = [cone[0], cone[2]]
        if (a === undefined || b === undefined) return yield* Effect.dieMessage("members expected")
        yield* call(a.node, b.id, "small")
        yield* poll(pathsTo(a.node, b.id), (p) => p.includes("direct"), {
          what: "A's path to B is direct",
          timeout: Duration.seconds(20),
          interval: Duration.millis(250),
        })
        const before = yield* routerRelayed(routers)
        expect(yield* call(a.node, b.id, "big")).toBe(BIG)
        const relayed = (yield* routerRelayed(routers)) - before
        console.log(`a 20 MiB answer put ${relayed} bytes through the routers`)
        expect(relayed).toBeLessThan(1024 * 1024)

        // Behind the symmetric NAT: calls work over the relay, and the metric says relayed.
        const s = symmetric[0]
        if (s === undefined) return yield* Effect.dieMessage("symmetric member expected")
        expect(yield* call(a.node, s.id, "small")).toBe(64)
        yield* Effect.sleep(Duration.seconds(8))
        expect(yield* pathsTo(a.node, s.id)).not.toContain("direct")
        const page = (yield* Local.request(s.node, "/metrics")).body
        expect(metric(page, "mesh_node_member_connections", 'path="relayed"')).toBeGreaterThan(0)
        expect(metric(page, "mesh_node_member_connections", 'path="direct"')).toBe(0)

        // Router 1 dies while A calls B over the direct path: not one call fails.
        const calls = yield* Effect.fork(
          Effect.forEach(Array.from({ length: 40 }), () =>
            Effect.zipRight(call(a.node, b.id, "small"), Effect.sleep(Duration.millis(100))),
          ),
        )
        yield* Effect.sleep(Duration.seconds(1))
        yield* (routers[0] as Topology.Router).kill
        yield* Fiber.join(calls)
      }),
    Duration.toMillis(Duration.minutes(6)),
  )
})

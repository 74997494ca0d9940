/**
 * A router restart (same data folder, same port) with nodes A, B and C, B serving an MCP service and a model, all
 * separate processes (issue 24). After each of five restarts, at different moments of B's provider-record refresh
 * cycle, B's service must be in the router's DHT again, discoverable from A and C, and callable through the proxy
 * from both, within 10 s of the router answering again. Before the fix the DHT stayed empty until B's next 5-minute
 * refresh.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as DemoInference from "../../src/demo/DemoInference.js"
import * as DemoMcpServer from "../../src/demo/DemoMcpServer.js"
import * as DhtProbe from "./DhtProbe.js"
import * as Local from "./LocalApi.js"
import { poll } from "./Requests.js"
import * as Topology from "./Topology.js"

/** Pauses between restarts, so that they fall at different phases of the refresh and announcement timers. */
const PAUSES_S = [2, 5, 11, 17, 23]
const HEALED_WITHIN = Duration.seconds(10)

const serviceConfig = (mcp: string, inference: string) =>
  [
    "services:",
    "  - name: demo",
    "    type: mcp",
    `    target_url: ${mcp}`,
    "  - name: demo",
    "    type: inference",
    `    target_url: ${inference}`,
    "",
  ].join("\n")

/** The node's proxied call to B's model list: true with the model in a 200 answer. */
const callable = (from: Topology.Node, b: string) =>
  Local.request(from, `/mesh/${b}/inference/demo/v1/models`).pipe(
    Effect.map((answer) => answer.status === 200 && answer.body.includes(DemoInference.MODEL)),
    Effect.orElseSucceed(() => false),
  )

describe("a router restart", () => {
  it.scopedLive(
    "B's service is in the DHT, discoverable and callable from A and C within 10 s of each of 5 restarts",
    () =>
      Effect.gen(function* () {
        const folder = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-router-restart-"))),
          (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
        )
        const cp = yield* Topology.controlPlane({ folder })
        const router = yield* Topology.router(cp, folder, "router")
        const mcp = yield* DemoMcpServer.make(0)
        const inference = yield* DemoInference.make(0)
        const [a, b, c] = yield* Effect.all(
          [
            Topology.node(cp, folder, "a"),
            Topology.node(cp, folder, "b", { config: serviceConfig(mcp, inference) }),
            Topology.node(cp, folder, "c"),
          ],
          { concurrency: "unbounded" },
        )
        const [, bId] = yield* Effect.all([Topology.peerIdOf(a), Topology.peerIdOf(b), Topology.peerIdOf(c)], {
          concurrency: "unbounded",
        })
        const routerAddress = yield* poll(
          Local.json<{ routers?: ReadonlyArray<{ address: string; connected: boolean }> }>(a, "/debug/connectivity"),
          (info) => info.routers?.some((r) => r.connected) === true,
          { what: "A is linked to the router", timeout: Duration.seconds(60), interval: Duration.millis(200) },
        ).pipe(Effect.map((info) => info.routers?.[0]?.address ?? ""))
        const probe = yield* DhtProbe.make(cp)

        /** Seconds from now until every check has passed once; the checks that never did, at the limit. */
        const heal = Effect.gen(function* () {
          const started = Date.now()
          const checks: Record<string, Effect.Effect<boolean>> = {
            "B in the router's DHT": Effect.map(probe.providers([routerAddress], "mcp", "demo"), (p) => p.has(bId)),
            "A discovers B": Effect.map(Topology.discover(a, "mcp", "demo"), (p) => p.includes(bId)),
            "C discovers B": Effect.map(Topology.discover(c, "mcp", "demo"), (p) => p.includes(bId)),
            "A calls B": callable(a, bId),
            "C calls B": callable(c, bId),
          }
          const healedAt: Record<string, number> = {}
          while (Date.now() - started < Duration.toMillis(HEALED_WITHIN) + 5_000) {
            const pending = Object.entries(checks).filter(([what]) => healedAt[what] === undefined)
            if (pending.length === 0) break
            const results = yield* Effect.forEach(pending, ([, check]) => check, { concurrency: "unbounded" })
            pending.forEach(([what], i) => {
              if (results[i] === true) healedAt[what] = (Date.now() - started) / 1000
            })
            yield* Effect.sleep(Duration.millis(250))
          }
          return Object.fromEntries(
            Object.keys(checks).map((what) => [what, healedAt[what] ?? Number.POSITIVE_INFINITY]),
          )
        })

        const first = yield* heal
        expect(Math.max(...Object.values(first)), JSON.stringify(first)).toBeLessThan(60)

        const rounds: Array<Record<string, number>> = []
        for (const pause of PAUSES_S) {
          yield* Effect.sleep(Duration.seconds(pause))
          yield* router.stop
          yield* router.start
          rounds.push(yield* heal)
        }
        console.log(
          `router restarts, seconds until healed after the router is ready:\n${rounds
            .map((round, i) => `  restart ${i + 1}: ${JSON.stringify(round)}`)
            .join("\n")}`,
        )
        for (const round of rounds) {
          for (const [what, seconds] of Object.entries(round)) {
            expect(seconds, `${what} after a restart`).toBeLessThanOrEqual(Duration.toSeconds(HEALED_WITHIN))
          }
        }
      }),
    Duration.toMillis(Duration.minutes(8)),
  )
})

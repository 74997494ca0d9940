/**
 * Two routers, one of them killed for good (issue 24): B places its provider records while linked to router 1 only;
 * router 2 starts later and the nodes link to it from /info. Router 2 must hold B's records before router 1 goes,
 * and once router 1 is killed B's service stays in the DHT, discoverable from A and C and callable from both. Then
 * router 1 comes back and router 2 goes: router 1 alone must name B again.
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

interface Connectivity {
  readonly routers?: ReadonlyArray<{ readonly address: string; readonly connected: boolean }>
}

const linkedRouters = (node: Topology.Node) =>
  Local.json<Connectivity>(node, "/debug/connectivity").pipe(
    Effect.map((info) => (info.routers ?? []).filter((r) => r.connected).map((r) => r.address)),
    Effect.orElseSucceed((): ReadonlyArray<string> => []),
  )

const callable = (from: Topology.Node, b: string) =>
  Local.request(from, `/mesh/${b}/inference/demo/v1/models`).pipe(
    Effect.map((answer) => answer.status === 200 && answer.body.includes(DemoInference.MODEL)),
    Effect.orElseSucceed(() => false),
  )

describe("two routers", () => {
  it.scopedLive(
    "the router B first placed its records on is killed for good: nothing is lost; back, it holds them again",
    () =>
      Effect.gen(function* () {
        const folder = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-two-routers-"))),
          (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
        )
        const cp = yield* Topology.controlPlane({ folder, syncInterval: "5s" })
        const first = yield* Topology.router(cp, folder, "router-1", { syncInterval: "5s" })
        const mcp = yield* DemoMcpServer.make(0)
        const inference = yield* DemoInference.make(0)
        const config = [
          "services:",
          `  - { name: demo, type: mcp, target_url: '${mcp}' }`,
          `  - { name: demo, type: inference, target_url: '${inference}' }`,
          "",
        ].join("\n")
        const [a, b, c] = yield* Effect.all(
          [
            Topology.node(cp, folder, "a", { syncInterval: "5s" }),
            Topology.node(cp, folder, "b", { config, syncInterval: "5s" }),
            Topology.node(cp, folder, "c", { syncInterval: "5s" }),
          ],
          { concurrency: "unbounded" },
        )
        const [, bId] = yield* Effect.all([Topology.peerIdOf(a), Topology.peerIdOf(b), Topology.peerIdOf(c)], {
          concurrency: "unbounded",
        })
        const [firstAddress = ""] = yield* poll(linkedRouters(b), (linked) => linked.length === 1, {
          what: "B is linked to router 1",
          timeout: Duration.seconds(60),
        })
        const probe = yield* DhtProbe.make(cp)
        yield* poll(probe.names(firstAddress, "mcp", "demo"), (found) => found.has(bId), {
          what: "router 1 holds B's records",
          timeout: Duration.seconds(30),
          interval: Duration.millis(250),
        })

        const second = yield* Topology.router(cp, folder, "router-2", { syncInterval: "5s" })
        const both = (node: Topology.Node) =>
          poll(linkedRouters(node), (linked) => linked.length === 2, {
            what: `${node.name} is linked to both routers`,
            timeout: Duration.seconds(60),
            interval: Duration.millis(250),
          })
        const linked = yield* Effect.all([both(a), both(b), both(c)], { concurrency: "unbounded" })
        const secondAddress = linked[1].find((address) => address !== firstAddress) ?? ""
        // B placed its records while router 2 did not exist: it must place them there when the link comes up.
        yield* poll(probe.names(secondAddress, "mcp", "demo"), (found) => found.has(bId), {
          what: "router 2 holds B's records",
          timeout: Duration.seconds(10),
          interval: Duration.millis(250),
        })

        yield* first.stop
        const killedAt = Date.now()
        const healed = yield* Effect.all(
          {
            dht: poll(probe.names(secondAddress, "mcp", "demo"), (found) => found.has(bId), {
              what: "router 2 still names B",
              timeout: Duration.seconds(10),
            }),
            a: poll(Topology.discover(a, "mcp", "demo"), (found) => found.includes(bId), {
              what: "A discovers B",
              timeout: Duration.seconds(10),
            }),
            c: poll(Topology.discover(c, "mcp", "demo"), (found) => found.includes(bId), {
              what: "C discovers B",
              timeout: Duration.seconds(10),
            }),
            aCalls: poll(callable(a, bId), (ok) => ok, { what: "A calls B", timeout: Duration.seconds(10) }),
            cCalls: poll(callable(c, bId), (ok) => ok, { what: "C calls B", timeout: Duration.seconds(10) }),
          },
          { concurrency: "unbounded" },
        )
        expect(healed.dht.has(bId)).toBe(true)
        console.log(`router 1 killed: all checks passed ${((Date.now() - killedAt) / 1000).toFixed(1)} s later`)

        // Router 1 comes back (same port and folder) and router 2 goes: the nodes must have linked to router 1 again
        // and placed B's records there, so that it alone names B. A relay reservation that never answered once held
        // the nodes' link loop, and with it the links to every router.
        yield* first.start
        yield* Effect.all(
          [a, b, c].map((node) => both(node)),
          { concurrency: "unbounded" },
        )
        yield* second.stop
        yield* poll(probe.names(firstAddress, "mcp", "demo"), (found) => found.has(bId), {
          what: "router 1, back, alone names B",
          timeout: Duration.seconds(10),
          interval: Duration.millis(250),
        })
        yield* poll(callable(a, bId), (ok) => ok, { what: "A calls B", timeout: Duration.seconds(10) })
      }),
    Duration.toMillis(Duration.minutes(5)),
  )
})

/**
 * Members behind NAT (issue 51), in the NAT lab (NatLab.ts): the control plane and two routers on the public
 * segment; A and B in homes behind cone-like NATs (plain masquerade), C and D behind symmetric ones (fully random
 * ports). Every dial to a member's private address stalls there, as it does on the internet, so whatever dials by
 * peer id before using the connection it has is caught here.
 *
 * - Cone: A discovers B's service within 5 s of both being members.
 * - Symmetric: C discovers D's service, calls it over a router's relay, and /debug/connectivity says why relayed.
 * - The router C's calls run through is killed: calls resume through the other router within 5 s.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect } from "effect"
import { demoServers } from "./DemoProcess.js"
import * as Local from "./LocalApi.js"
import * as NatLab from "./NatLab.js"
import { poll } from "./Requests.js"
import * as Topology from "./Topology.js"

/** What the timed steps must stay under on a loaded CI machine; the goals (5 s) are printed with each figure. */
const LOADED_BOUND_MS = 12_000
/**
 * A router's death: the goal itself. 0.2-0.3 s on an idle machine (the other router's relay is dialled at once, and
 * no longer waits behind the hole punch's dial), so 5 s leaves the loaded CI machine more than ten times that.
 */
const FAILOVER_BOUND_MS = 5_000

const why = NatLab.unavailable()
if (why !== undefined) console.log(`NAT lab tests skipped: ${why}`)

interface PeerView {
  readonly paths?: ReadonlyArray<string>
  readonly relays?: ReadonlyArray<{ readonly router?: string; readonly reason?: string }>
}

const peerView = (node: Topology.Node, peer: string) =>
  Local.json<{ peer?: PeerView }>(node, `/debug/connectivity?peer=${peer}`).pipe(
    Effect.map((info): PeerView => info.peer ?? {}),
    Effect.orElseSucceed((): PeerView => ({})),
  )

const withDemo = (urls: { mcp: string }) =>
  ["services:", `  - { name: demo, type: mcp, target_url: '${urls.mcp}' }`, ""].join("\n")

/** An MCP client of `peer`'s demo service through `node`'s proxy, for the rest of the scope. */
const mcpClient = (node: Topology.Node, peer: string) =>
  Effect.acquireRelease(
    Effect.tryPromise(async () => {
      const client = new Client({ name: "nat-lab", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${Local.BASE}/mesh/${peer}/mcp/demo`), {
          fetch: Local.fetchFor(node),
        }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined)),
  )

const wordCount = (client: Client, timeout: Duration.DurationInput) =>
  Effect.tryPromise(
    (signal) =>
      client.callTool({ name: "word_count", arguments: { text: "one two three" } }, undefined, {
        signal,
        timeout: Duration.toMillis(timeout),
      }) as Promise<CallToolResult>,
  ).pipe(Effect.map((result) => JSON.stringify(result.content)))

/** A member linked to the mesh (a router connected) and, for `publishing`, with its service published. */
const ready = (node: Topology.Node, publishing: boolean) =>
  poll(
    Effect.zip(
      Local.json<{ connected?: boolean }>(node, "/debug/connectivity").pipe(
        Effect.map((view) => view.connected === true),
        Effect.orElseSucceed(() => false),
      ),
      Effect.map(node.output, (output) => !publishing || output.includes('message="service published"')),
    ),
    ([linked, published]) => linked && published,
    { what: `${node.name} is linked and publishing`, timeout: Duration.seconds(60), interval: Duration.millis(100) },
  )

/**
 * When both members are: the moment both are members of the mesh (linked to a router) and the second one's service
 * is published (its backend answered its probe), which is when the first can possibly find it.
 */
const bothMembers = (x: Topology.Node, y: Topology.Node) =>
  Effect.gen(function* () {
    const [xId, yId] = yield* Effect.all([Topology.peerIdOf(x), Topology.peerIdOf(y)], { concurrency: "unbounded" })
    const joined = Date.now()
    yield* Effect.all([ready(x, false), ready(y, true)], { concurrency: "unbounded" })
    return { xId, yId, joined, at: Date.now() }
  })

/** What A knew of B when a step failed: its connectivity view and its last log lines. */
const explain = (node: Topology.Node, peer: string) =>
  Effect.gen(function* () {
    const view = yield* Local.request(node, `/debug/connectivity?peer=${peer}`).pipe(Effect.orElseSucceed(() => ({})))
    const output = yield* node.output
    yield* Effect.logError(`${node.name}'s view of ${peer}: ${JSON.stringify(view)}\n${output.slice(-4_000)}`)
  })

describe.skipIf(why !== undefined)("members behind NAT (the NAT lab)", () => {
  it.scopedLive(
    "discovery across NATs, calls over the relay behind symmetric NATs, and a router's death survived",
    () =>
      Effect.gen(function* () {
        const folder = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-nat-lab-"))),
          (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
        )
        const lab = yield* NatLab.make(["cone", "cone", "symmetric", "symmetric"])
        const [homeA, homeB, homeC, homeD] = lab.homes
        if (homeA === undefined || homeB === undefined || homeC === undefined || homeD === undefined) {
          return yield* Effect.dieMessage("four homes expected")
        }
        const { cp, routers } = yield* NatLab.publicMesh(lab, folder)
        // One pair at a time: four members starting at once on a small machine would time their own start-up.
        const demoB = yield* demoServers(homeB.prefix)
        const [a, b] = yield* Effect.all(
          [NatLab.member(cp, folder, homeA, "a"), NatLab.member(cp, folder, homeB, "b", { config: withDemo(demoB) })],
          { concurrency: "unbounded" },
        )

        // Cone: A finds B's service within 5 s of both being members.
        const ab = yield* bothMembers(a, b)
        yield* poll(Topology.discover(a, "mcp", "demo", "2s"), (found) => found.includes(ab.yId), {
          what: "A discovers B across two NATs",
          timeout: Duration.seconds(30),
          interval: Duration.millis(250),
        }).pipe(Effect.tapError(() => explain(a, ab.yId)))
        const discoveredAfter = Date.now() - ab.at
        console.log(
          `cone: A discovered B ${discoveredAfter} ms after both were members and B's service was published ` +
            `(${Date.now() - ab.joined} ms after both joined)`,
        )
        // The goal is 5 s (0.8-1 s on an idle machine); CI runs this beside the soaks on two cores, where 6-8.5 s
        // was seen. Without the fix A never finds B.
        expect(discoveredAfter).toBeLessThanOrEqual(LOADED_BOUND_MS)

        // Symmetric: C finds D's service and calls it; the path is relayed, and the debug view says why.
        const demoD = yield* demoServers(homeD.prefix)
        const [c, d] = yield* Effect.all(
          [NatLab.member(cp, folder, homeC, "c"), NatLab.member(cp, folder, homeD, "d", { config: withDemo(demoD) })],
          { concurrency: "unbounded" },
        )
        const cd = yield* bothMembers(c, d)
        yield* poll(Topology.discover(c, "mcp", "demo", "2s"), (found) => found.includes(cd.yId), {
          what: "C discovers D across two symmetric NATs",
          timeout: Duration.seconds(30),
          interval: Duration.millis(250),
        })
        const client = yield* mcpClient(c, cd.yId)
        expect(yield* wordCount(client, Duration.seconds(10))).toContain("3 words")
        const view = yield* peerView(c, cd.yId)
        expect(view.paths?.length).toBeGreaterThan(0)
        expect(view.paths?.every((path) => path === "relayed")).toBe(true)
        // D announces only its private address (the symmetric NAT's mapping is of no use to anyone else).
        expect(["no_public_address", "direct_dial_failed"]).toContain(view.relays?.[0]?.reason)

        // The router C's path to D runs through dies; calls resume through the other one within 5 s.
        const through = view.relays?.[0]?.router
        const links = yield* Local.json<{ routers: ReadonlyArray<{ address: string; peer_id: string | null }> }>(
          c,
          "/debug/connectivity",
        )
        const address = links.routers.find((r) => r.peer_id === through)?.address ?? ""
        const dying = routers[lab.public.routers.findIndex((host) => address.includes(`/ip4/${host}/`))]
        if (dying === undefined) return yield* Effect.dieMessage(`relayed through an unknown router: ${through}`)
        yield* dying.kill
        const killedAt = Date.now()
        const attempts: Array<string> = []
        const resumed = yield* poll(
          wordCount(client, Duration.seconds(1)).pipe(
            Effect.tapError((error) =>
              Effect.sync(() => attempts.push(`${Date.now() - killedAt} ms: ${String(error).slice(0, 160)}`)),
            ),
            Effect.orElseSucceed(() => ""),
          ),
          (text) => text.includes("3 words"),
          {
            what: "calls resume through the other router",
            timeout: Duration.seconds(30),
            interval: Duration.millis(100),
          },
        ).pipe(Effect.map(() => Date.now() - killedAt))
        console.log(
          `router ${dying.name} killed: calls resumed after ${resumed} ms; failed calls:\n${attempts.join("\n")}`,
        )
        if (resumed > 5_000) yield* explain(c, cd.yId)
        // The goal is 5 s; before issue 51's fix 8-8.4 s (a relayed dial stuck behind the hole punch's dial).
        expect(resumed).toBeLessThanOrEqual(FAILOVER_BOUND_MS)
        const after = yield* peerView(c, cd.yId)
        expect(after.relays?.map((r) => r.router)).not.toContain(through)
      }),
    Duration.toMillis(Duration.minutes(4)),
  )
})

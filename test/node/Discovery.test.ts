import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import type * as NodeFile from "../../src/domain/NodeFile.js"
import type { ServiceType } from "../../src/domain/ServiceType.js"
import { Discovery } from "../../src/services/discovery/Discovery.js"
import { LocalServices } from "../../src/services/local/LocalServices.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import * as Forwarder from "../scale/Forwarder.js"
import { admin, setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, socket, tcp, tokenHeader } from "./support.js"

interface Row {
  readonly peer_id: string
  readonly srv_name: string
  readonly srv_description: string
  readonly labels: Record<string, string>
  readonly local_proxy_url: string
  readonly note?: string
}

const LABELS = { zone: "eu-1" }

/** A control plane whose policy lets nodes carry a zone label, and one router. */
const mesh = Effect.gen(function* () {
  const cp = yield* Harness.make({ autoApproveEnrollment: true })
  yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*"] }] })
  yield* RouterHarness.make(cp)
  return cp
})

const service = (
  type: ServiceType,
  name: string,
  target: string,
  description = `${name} service`,
): NodeFile.ServiceSpec => ({ name, type, description, target_url: target, env: {} })

const file = (
  services: ReadonlyArray<NodeFile.ServiceSpec>,
  labels: Record<string, string> = {},
): NodeFile.NodeFile => ({
  labels,
  egress: { require_labels: {} },
  services,
})

const started = (cp: Harness.ControlPlaneHarness, options: NodeHarness.Options = {}) =>
  Effect.gen(function* () {
    const node = yield* NodeHarness.make(cp, options)
    yield* node.connected
    return { node, peerId: yield* node.peerId }
  })

const member = (node: NodeHarness.NodeHarness) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member" ? Effect.succeed(phase.context) : Effect.dieMessage("not a member"),
  )

const discover = (node: NodeHarness.NodeHarness, query: string) =>
  Effect.map(tcp(node, `/mesh/service/discover?timeout=5s&${query}`), (reply) => {
    expect(reply.status, reply.text).toBe(200)
    return reply.json as ReadonlyArray<Row>
  })

/** An SSE answer: the data of each event, by event name (`message` when unnamed). */
const sse = (node: NodeHarness.NodeHarness, query: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${node.url}/mesh/service/discover?timeout=5s&${query}`, {
      headers: { ...tokenHeader(node), ...headers },
    })
    const text = await response.text()
    const events = text
      .split("\n\n")
      .filter((block) => block.trim().length > 0)
      .map((block) => {
        const lines = block.split("\n")
        const name = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message"
        const data = lines.find((l) => l.startsWith("data: "))?.slice(6) ?? ""
        return { name, data: JSON.parse(data) as unknown }
      })
    return { status: response.status, contentType: response.headers.get("content-type"), events }
  })

describe("publication and discovery", () => {
  it.live(
    "services on B are found from A over HTTP and SSE, paged, with the labels B's credential attests",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* mesh
          const tools = yield* Backends.mcp(["echo", "shout"])
          const models = yield* Backends.inference(["tiny-1"])
          const agent = yield* Backends.agent("helper")
          const b = yield* started(cp, {
            file: file(
              [
                service("mcp", "gamma", `${tools.url}/mcp`),
                service("mcp", "alpha", `${tools.url}/mcp`, "the first"),
                service("mcp", "beta", `${tools.url}/mcp`),
                service("inference", "llm", models.url),
                service("a2a", "helper", agent.url),
              ],
              LABELS,
            ),
          })
          const a = yield* started(cp)

          const all = yield* eventually(30, discover(a.node, "type=mcp"), (rows) => rows.length === 3)
          const port = new URL(a.node.url).port
          expect(all).toEqual(
            ["alpha", "beta", "gamma"].map((name) => ({
              peer_id: b.peerId,
              srv_name: name,
              srv_description: name === "alpha" ? "the first" : `${name} service`,
              labels: LABELS,
              local_proxy_url: `http://127.0.0.1:${port}/mesh/${b.peerId}/mcp/${name}`,
            })),
          )
          // The labels are what A verified in B's credential, as B's evidence on A shows them.
          const evidence = yield* socket(a.node, `/mesh/peer/${b.peerId}/evidence`)
          expect((evidence.json as { labels: Record<string, string> }).labels).toEqual(LABELS)

          // Paging happens after collecting, in peer and name order.
          expect((yield* discover(a.node, "type=mcp&limit=2")).map((r) => r.srv_name)).toEqual(["alpha", "beta"])
          expect((yield* discover(a.node, "type=mcp&limit=2&offset=2")).map((r) => r.srv_name)).toEqual(["gamma"])
          expect(yield* discover(a.node, "type=mcp&offset=3")).toEqual([])
          // By name: the type+name key.
          expect((yield* discover(a.node, "type=mcp&name=beta")).map((r) => r.srv_name)).toEqual(["beta"])
          expect(yield* discover(a.node, "type=mcp&name=nothing-here")).toEqual([])

          const inference = yield* eventually(30, discover(a.node, "type=inference"), (rows) => rows.length === 1)
          expect(inference[0]?.srv_name).toBe("llm")
          expect(inference[0]?.local_proxy_url).toBe(`http://127.0.0.1:${port}/mesh/${b.peerId}/inference/llm`)
          expect(inference[0]?.note).toContain("not with call_remote_tool")
          const agents = yield* eventually(30, discover(a.node, "type=a2a"), (rows) => rows.length === 1)
          expect(agents[0]).toMatchObject({ peer_id: b.peerId, srv_name: "helper", labels: LABELS })
          expect(agents[0]?.note).toBeUndefined()

          // SSE: one event per result, then `done`; asked for by the query or by Accept.
          const streamed = yield* sse(a.node, "type=mcp&stream=true")
          expect(streamed.status).toBe(200)
          expect(streamed.contentType).toContain("text/event-stream")
          expect(streamed.events.at(-1)).toEqual({ name: "done", data: {} })
          const results = streamed.events.slice(0, -1)
          expect(results.every((e) => e.name === "message")).toBe(true)
          expect(results.map((e) => (e.data as Row).srv_name).sort()).toEqual(["alpha", "beta", "gamma"])
          const accepted = yield* sse(a.node, "type=mcp&limit=2", { accept: "text/event-stream" })
          expect(accepted.events.map((e) => e.name)).toEqual(["message", "message", "done"])
          const skipped = yield* sse(a.node, "type=mcp&stream=1&offset=2")
          expect(skipped.events.map((e) => e.name)).toEqual(["message", "done"])
        }),
      ),
    120_000,
  )

  it.live("bad queries are 400 with the error body; other methods 405; no token 401", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* mesh
        const a = yield* started(cp)
        for (const query of [
          "",
          "type=",
          "type=egress",
          "type=MCP",
          "type=mcp&limit=0",
          "type=mcp&limit=abc",
          "type=mcp&limit=1001",
          "type=mcp&offset=-1",
          "type=mcp&offset=1.5",
          "type=mcp&timeout=abc",
          "type=mcp&timeout=0",
          "type=mcp&timeout=-1s",
          "type=mcp&timeout=10",
          "type=mcp&name=../x",
          "type=mcp&stream=maybe",
        ]) {
          const reply = yield* tcp(a.node, `/mesh/service/discover?${query}`)
          expect(reply.status, query).toBe(400)
          expect((reply.json as { error: string }).error, query).toBe("bad_request")
        }
        const missing = yield* tcp(a.node, "/mesh/service/discover")
        expect((missing.json as { message: string }).message).toBe("type is required: one of mcp, inference, a2a")
        expect((yield* tcp(a.node, "/mesh/service/discover?type=mcp", { method: "POST" })).status).toBe(405)
        expect((yield* tcp(a.node, "/mesh/service/discover?type=mcp", { headers: {} })).status).toBe(401)
        // Nothing published anywhere: an empty list, not an error.
        expect(yield* discover(a.node, "type=mcp&timeout=2s")).toEqual([])
      }),
    ),
  )

  it.live(
    "a service whose backend is down is withheld, then published once it answers",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* mesh
          const tools = yield* Backends.mcp(["echo"])
          // The late backend's address is held from the start, cutting every connection until the backend is up.
          const nothing = yield* Backends.down
          const address = yield* Forwarder.make(nothing.port)
          const b = yield* started(cp, {
            file: file([service("mcp", "up", `${tools.url}/mcp`), service("inference", "late", address.url)]),
          })
          const a = yield* started(cp)
          // Once B's published service is found, B has announced what it will: the other one is not there.
          yield* eventually(30, discover(a.node, "type=mcp"), (rows) => rows.length === 1)
          expect(yield* discover(a.node, "type=inference")).toEqual([])
          const local = Context.get(yield* member(b.node), LocalServices)
          const late = yield* local.lookup("inference", "late")
          expect(Option.map(late, (s) => s.state)).toEqual(Option.some("withheld"))
          // The control plane's catalog shows what B publishes, not what it is configured with.
          const reported = Effect.map(admin(cp, "GET", "/admin/status"), (status) =>
            (
              status.json as { catalog: ReadonlyArray<{ peer_id: string; services: ReadonlyArray<{ name: string }> }> }
            ).catalog
              .filter((entry) => entry.peer_id === b.peerId)
              .flatMap((entry) => entry.services.map((s) => s.name))
              .sort(),
          )
          yield* eventually(10, reported, (names) => names.join() === "up")

          yield* address.target((yield* Backends.inference(["tiny-1"])).port)
          const found = yield* eventually(60, discover(a.node, "type=inference"), (rows) => rows.length === 1)
          expect(found[0]).toMatchObject({ peer_id: b.peerId, srv_name: "late" })
          expect(Option.map(yield* local.lookup("inference", "late"), (s) => [s.state, s.keys])).toEqual(
            Option.some(["published", ["tiny-1"]]),
          )
          yield* eventually(10, reported, (names) => names.join() === "late,up")
        }),
      ),
    120_000,
  )

  it.live(
    "a node's DHT routing table holds routers only, though every answer names other nodes as providers",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          const router = yield* RouterHarness.make(cp)
          const tools = yield* Backends.mcp(["echo"])
          const shared = file([service("mcp", "shared", `${tools.url}/mcp`)])
          const a = yield* started(cp)
          yield* started(cp, { file: shared })
          yield* started(cp, { file: shared })
          yield* eventually(30, discover(a.node, "type=mcp&name=shared"), (rows) => rows.length === 2)
          yield* eventually(30, discover(a.node, "type=mcp"), (rows) => rows.length === 2)
          // Providers named in an answer would enter the table: past K of them, a query for some keys would start
          // from nodes (which serve no DHT) only, and find nothing a router holds.
          const table = Effect.map(member(a.node), (context) =>
            (
              Context.get(context, MeshHost).libp2p.services.dht as unknown as {
                routingTable: { closestPeers(key: Uint8Array, o: { count: number }): Array<{ toString(): string }> }
              }
            ).routingTable
              .closestPeers(new Uint8Array(32), { count: 100 })
              .map(String),
          )
          // kad-dht adds peers from a queue: give it the moment it takes.
          yield* Effect.sleep("1 second")
          expect(yield* table).toEqual([router.peerId])
        }),
      ),
    120_000,
  )

  it.live(
    "discovery leaves out this node and banned peers",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* mesh
          const tools = yield* Backends.mcp(["echo"])
          const shared = file([service("mcp", "shared", `${tools.url}/mcp`)])
          const a = yield* started(cp, { file: shared })
          const b = yield* started(cp, { file: shared })
          const c = yield* started(cp, { file: shared })
          const peers = (rows: ReadonlyArray<Row>) => rows.map((r) => r.peer_id).sort()
          const found = yield* eventually(30, discover(a.node, "type=mcp&name=shared"), (rows) => rows.length === 2)
          expect(peers(found)).toEqual([b.peerId, c.peerId].sort())

          expect((yield* admin(cp, "POST", "/admin/revoke", { peer_id: c.peerId })).status).toBe(200)
          // C's records stay on the router until they expire; A leaves it out because it is banned.
          const after = yield* eventually(15, discover(a.node, "type=mcp&name=shared"), (rows) => rows.length === 1)
          expect(peers(after)).toEqual([b.peerId])
          // By type alone only the DHT answers, and B's record under the type's key may land after the gossip that
          // answered by name above: wait for it, then C must still be left out.
          const byType = yield* eventually(15, discover(a.node, "type=mcp"), (rows) => rows.length > 0)
          expect(peers(byType)).toEqual([b.peerId])
        }),
      ),
    120_000,
  )

  it.live(
    "the gossip view lists B for its tool names and model ids, with its labels and load",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* mesh
          const tools = yield* Backends.mcp(["echo", "shout"])
          const models = yield* Backends.inference(["tiny-1", "tiny-2"])
          const b = yield* started(cp, {
            file: file([service("mcp", "tools", `${tools.url}/mcp`), service("inference", "llm", models.url)], LABELS),
          })
          const a = yield* started(cp)
          const discovery = Context.get(yield* member(a.node), Discovery)

          const byTool = yield* eventually(30, discovery.announcers("mcp", "shout"), (list) => list.length > 0)
          expect(byTool).toEqual([
            expect.objectContaining({
              peerId: b.peerId,
              type: "mcp",
              service: "tools",
              keys: ["echo", "shout"],
              labels: LABELS,
              activeRequests: 0,
            }),
          ])
          const byModel = yield* eventually(30, discovery.announcers("inference", "tiny-2"), (list) => list.length > 0)
          expect(byModel).toEqual([
            expect.objectContaining({ peerId: b.peerId, service: "llm", keys: ["tiny-1", "tiny-2"], labels: LABELS }),
          ])
          expect(yield* discovery.announcers("inference", "no-such-model")).toEqual([])
          expect(yield* discovery.announcers("mcp", "tiny-1")).toEqual([])

          // Requests B has in flight for a service travel with its next announcements.
          const local = Context.get(yield* member(b.node), LocalServices)
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* local.track("inference", "llm")
              yield* local.track("inference", "llm")
              expect(Option.map(yield* local.lookup("inference", "llm"), (s) => s.inFlight)).toEqual(Option.some(2))
              yield* eventually(
                30,
                discovery.announcers("inference", "tiny-1"),
                (list) => list[0]?.activeRequests === 2,
              )
            }),
          )
          expect(Option.map(yield* local.lookup("inference", "llm"), (s) => s.inFlight)).toEqual(Option.some(0))
        }),
      ),
    120_000,
  )
})

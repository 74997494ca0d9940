/**
 * Federation's rounds over fake discovery, connections and MCP peers, on the test clock: what each round asks of
 * the network. A quiet provider is searched for, asked its catalog and listed a bounded number of times however many
 * rounds pass, and so is one whose policy refuses this node; a provider that announces other tools, or that this
 * node lost its connection to, is listed again at the next round; one a call failed on is confirmed again; one that
 * goes away drops out at the next round and, back without the service, stays out. A listing is asked again when its
 * `ttlMs` says (bounded, jittered, backed off while unchanged), or at once when the provider announces other tools.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Context, Effect, Layer, Option, Ref, Stream, TestClock } from "effect"
import type { NodeSettings } from "../../../src/config/NodeConfig.js"
import { NodeConfig } from "../../../src/config/NodeConfig.js"
import * as ListingFreshness from "../../../src/domain/ListingFreshness.js"
import * as PeerTools from "../../../src/domain/PeerTools.js"
import * as FederationLive from "../../../src/layers/federation/FederationLive.js"
import * as MetricsLive from "../../../src/layers/operations/MetricsLive.js"
import type { AuthenticatedPeer } from "../../../src/p2p/Trust.js"
import { type Announcer, type DiscoveredService, Discovery } from "../../../src/services/discovery/Discovery.js"
import { type FederatedTool, Federation } from "../../../src/services/federation/Federation.js"
import * as FederationScope from "../../../src/services/federation/FederationScope.js"
import { PeerMcp, PeerMcpError } from "../../../src/services/mcp/PeerMcp.js"
import { MeshHost, type MeshHostService } from "../../../src/services/mesh/MeshHost.js"
import { ToolPinning } from "../../../src/services/toolpinning/ToolPinning.js"
import { ToolSearch } from "../../../src/services/toolsearch/ToolSearch.js"

interface Peer {
  /** Its backend's tools. */
  readonly tools: ReadonlyArray<string>
  /** Up, connected to this node and answering. */
  readonly up: boolean
  /** Publishes (and announces) `demo`. */
  readonly publishing: boolean
  /** This node holds a connection to it (else it dials on the next request); as `up` when absent. */
  readonly connected?: boolean
  /** Its backend's version, in its tools' descriptions. */
  readonly version?: number
  /** Its policy refuses this node's `tools/list`. */
  readonly refuses?: boolean
  /** The `ttlMs` its listings carry, as sent (a modern server); none as a 2025-era server. */
  readonly ttlMs?: number
}

const tool = (name: string, version = 1): Tool => ({
  name,
  description: `does ${name} (v${version})`,
  inputSchema: { type: "object" },
})

const service = (peerId: string): DiscoveredService => ({
  peerId,
  type: "mcp",
  name: "demo",
  description: "",
  labels: {},
})

const settings = {
  file: { labels: {}, egress: { require_labels: {} }, services: [], federate: ["mcp://demo"] },
} as unknown as NodeSettings

/** A federating node over fakes: `peers` is the network, the counters what the network was asked. */
const setup = (initial: Record<string, Peer>) =>
  Effect.gen(function* () {
    const peers = yield* Ref.make<Readonly<Record<string, Peer>>>(initial)
    const asked = yield* Ref.make({ searches: 0, catalogs: 0, lists: 0 })
    const count = (what: "searches" | "catalogs" | "lists") => Ref.update(asked, (n) => ({ ...n, [what]: n[what] + 1 }))
    const catalog = (peerId: string) =>
      Effect.zipRight(
        count("catalogs"),
        Effect.flatMap(Ref.get(peers), (all) => {
          const peer = all[peerId]
          if (peer === undefined || !peer.up) return Effect.fail("unreachable")
          return Effect.succeed(peer.publishing ? [service(peerId)] : [])
        }),
      )
    // Heard just now: every round hears each announcing peer afresh.
    const announcing = Effect.zipWith(Ref.get(peers), Clock.currentTimeMillis, (all, now) =>
      Object.entries(all)
        .filter(([, p]) => p.up && p.publishing)
        .map(
          ([peerId, p]): Announcer => ({
            peerId,
            type: "mcp",
            service: "demo",
            keys: [...p.tools].sort(),
            labels: {},
            labelsAttested: true,
            activeRequests: 0,
            receivedAtMs: now,
          }),
        ),
    )
    const discovery = Discovery.of({
      find: () => Stream.die("not used by federation"),
      // The DHT names every peer that ever published (records linger); each is asked its catalog.
      providers: () =>
        Stream.unwrap(
          Effect.zipRight(
            count("searches"),
            Effect.map(Ref.get(peers), (all) =>
              Stream.fromIterable(Object.keys(all)).pipe(
                Stream.mapEffect((peerId) =>
                  Effect.map(Effect.either(catalog(peerId)), (services) => ({ peerId, services })),
                ),
              ),
            ),
          ),
        ),
      catalogOf: (peerId) => catalog(peerId),
      announcers: (_type, key) => Effect.map(announcing, (all) => all.filter((a) => a.keys.includes(key))),
      serviceAnnouncers: () => announcing,
    })
    const host = {
      peer: (peerId: string) =>
        Effect.map(Ref.get(peers), (all) =>
          (all[peerId]?.connected ?? all[peerId]?.up) === true
            ? Option.some({ peerId, labels: {} } as unknown as AuthenticatedPeer)
            : Option.none(),
        ),
    } as unknown as MeshHostService
    const mcp = PeerMcp.of({
      listTools: (peerId) =>
        Effect.zipRight(
          count("lists"),
          Effect.flatMap(Ref.get(peers), (all) => {
            const peer = all[peerId]
            if (peer?.refuses === true) return Effect.fail(new PeerMcpError({ reason: "refused", message: "denied" }))
            return peer?.up === true && peer.publishing
              ? Effect.succeed({
                  tools: peer.tools.flatMap((name) => PeerTools.listed(tool(name, peer.version)) ?? []),
                  ttlMs: peer.ttlMs,
                })
              : Effect.fail(new PeerMcpError({ reason: "unreachable", message: "gone" }))
          }),
        ),
      callTool: (peerId) =>
        Effect.flatMap(Ref.get(peers), (all) =>
          all[peerId]?.publishing === true
            ? Effect.succeed({ content: [{ type: "text" as const, text: "ok" }] })
            : Effect.fail(new PeerMcpError({ reason: "failed", message: "demo is not published" })),
        ),
      sessions: Effect.succeed(0),
    })
    const index = ToolSearch.of({
      replace: () => Effect.void,
      forget: () => Effect.void,
      search: () => Effect.succeed([]),
      size: Effect.succeed(0),
    })
    // Pinning off: these rounds are about what is asked of the network (pinning has its own tests).
    const unpinned = { pin: "unpinned" as const, fingerprint: "", expected: [], usable: true }
    const pinning = ToolPinning.of({
      modeOf: () => "off",
      judge: () => Effect.succeed(unpinned),
      judgeListing: (_peer, _labels, _service, definitions) => Effect.succeed(definitions.map(() => unpinned)),
      held: () => Effect.succeed({ _tag: "NoListing" }),
      pinned: () => Effect.succeed(false),
    })
    const federation = yield* Layer.build(
      FederationLive.layer.pipe(
        Layer.provide(MetricsLive.layer),
        Layer.provide(FederationScope.byAgentScope),
        Layer.provide(Layer.succeed(NodeConfig, settings)),
        Layer.provide(Layer.succeed(Discovery, discovery)),
        Layer.provide(Layer.succeed(MeshHost, host)),
        Layer.provide(Layer.succeed(PeerMcp, mcp)),
        Layer.provide(Layer.succeed(ToolSearch, index)),
        Layer.provide(Layer.succeed(ToolPinning, pinning)),
      ),
    ).pipe(Effect.map(Context.get(Federation)))
    yield* settle
    return {
      peers,
      asked: Ref.get(asked),
      listed: Effect.map(federation.list({}), (all) => all.map((t) => t.name)),
      /** Calls the first listed tool: an error or not. */
      call: Effect.flatMap(federation.list({}), (all) =>
        Effect.map(federation.call(all[0] as FederatedTool, {}), (result) => result.isError === true),
      ),
      described: Effect.map(federation.list({}), (all) => all.map((t) => t.definition.description ?? "")),
    }
  })

/** A few milliseconds of real time, for the round's fiber to finish what the clock woke it for. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))

/** One round's worth of time. */
const round = Effect.zipRight(TestClock.adjust(FederationLive.REFRESH), settle)

const rounds = (n: number) => Effect.repeatN(round, n - 1)

const up = (tools: ReadonlyArray<string>): Peer => ({ tools, up: true, publishing: true })

describe("federation rounds", () => {
  it.scoped("a quiet provider is asked at most twice in 30 s of rounds: one listing, one search, one catalog", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: up(["echo"]) })
      expect(yield* node.listed).toEqual(["demo__echo"])
      yield* rounds(10)
      expect(yield* node.listed).toEqual(["demo__echo"])
      const asked = yield* node.asked
      expect(asked.lists).toBeLessThanOrEqual(2)
      expect(asked.searches).toBeLessThanOrEqual(2)
      expect(asked.catalogs).toBeLessThanOrEqual(2)
    }),
  )

  it.scoped("a provider whose policy refuses this node is asked once per search, not at each announcement", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: { ...up(["echo"]), refuses: true } })
      yield* rounds(9)
      expect(yield* node.listed).toEqual([])
      const asked = yield* node.asked
      expect([asked.lists, asked.catalogs]).toEqual([1, 1])
    }),
  )

  it.scoped("a provider that announces other tools is listed again at the next round", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: up(["echo"]) })
      yield* rounds(2)
      const before = (yield* node.asked).lists
      yield* Ref.set(node.peers, { p1: up(["count", "echo"]) })
      yield* round
      expect(yield* node.listed).toEqual(["demo__count", "demo__echo"])
      expect((yield* node.asked).lists).toBe(before + 1)
    }),
  )

  it.scoped("a provider this node lost its connection to is confirmed and listed again, as a new one is", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: up(["echo"]) })
      yield* rounds(2)
      const before = yield* node.asked
      // It restarted with another version of its backend: the same tool names, so the same announcement.
      yield* Ref.set(node.peers, { p1: { ...up(["echo"]), connected: false, version: 2 } })
      yield* round
      expect((yield* node.described)[0]).toContain("(v2)")
      const after = yield* node.asked
      expect([after.catalogs - before.catalogs, after.lists - before.lists]).toEqual([1, 1])
    }),
  )

  it.scoped(
    "a provider a call failed on is confirmed again at the next round: no longer publishing, it drops out",
    () =>
      Effect.gen(function* () {
        const node = yield* setup({ p1: up(["echo"]) })
        yield* rounds(2)
        expect(yield* node.call).toBe(false)
        // Its backend stopped answering: it withholds the service, still connected.
        yield* Ref.set(node.peers, { p1: { ...up(["echo"]), publishing: false } })
        expect(yield* node.call).toBe(true)
        yield* round
        expect(yield* node.listed).toEqual([])
      }),
  )

  it.scoped("a provider that goes away drops out at the next round; back without the service, it stays out", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: up(["echo"]), p2: up(["echo"]) })
      expect(yield* node.listed).toEqual(["demo__echo"])
      yield* rounds(2)
      yield* Ref.update(node.peers, (all) => ({ ...all, p2: { ...up(["echo"]), up: false } }))
      yield* round
      yield* Ref.update(node.peers, (all) => ({ ...all, p1: { ...up(["echo"]), up: false } }))
      yield* round
      expect(yield* node.listed).toEqual([])
      yield* Ref.update(node.peers, (all) => ({ ...all, p1: { ...up(["echo"]), publishing: false } }))
      yield* rounds(12)
      expect(yield* node.listed).toEqual([])
      // p2 comes back with it: announced, confirmed and listed at the next round.
      yield* Ref.update(node.peers, (all) => ({ ...all, p2: up(["echo"]) }))
      yield* round
      expect(yield* node.listed).toEqual(["demo__echo"])
    }),
  )

  it.scoped("a listing with ttlMs is not asked again within its ttl, and is after it", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: { ...up(["echo"]), ttlMs: 20_000 } })
      expect((yield* node.asked).lists).toBe(1)
      // 18 s: within the ttl, however many rounds and the search at 30 s.
      yield* rounds(6)
      expect((yield* node.asked).lists).toBe(1)
      // 24 s: past the ttl and its jitter (a tenth at most).
      yield* rounds(2)
      expect((yield* node.asked).lists).toBe(2)
    }),
  )

  it.scoped("a provider that announces other tools is listed again before its ttl", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: { ...up(["echo"]), ttlMs: 600_000 } })
      yield* rounds(2)
      expect((yield* node.asked).lists).toBe(1)
      yield* Ref.set(node.peers, { p1: { ...up(["count", "echo"]), ttlMs: 600_000 } })
      yield* round
      expect(yield* node.listed).toEqual(["demo__count", "demo__echo"])
      expect((yield* node.asked).lists).toBe(2)
    }),
  )

  it.scoped("a huge ttlMs is held to the ceiling: listed again after ten minutes, not before", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: { ...up(["echo"]), ttlMs: Number.MAX_SAFE_INTEGER } })
      // 9 minutes.
      yield* rounds(180)
      expect((yield* node.asked).lists).toBe(1)
      // 11 minutes and a bit: past the ceiling and its jitter.
      yield* rounds(42)
      expect((yield* node.asked).lists).toBe(2)
      expect(ListingFreshness.CEILING_MS * (1 + ListingFreshness.JITTER)).toBeLessThan(222 * 3_000)
    }),
  )

  for (const ttlMs of [0, -5_000]) {
    it.scoped(`a ttlMs of ${ttlMs} is held to the floor and the poll backs off while nothing changes`, () =>
      Effect.gen(function* () {
        const node = yield* setup({ p1: { ...up(["echo"]), ttlMs } })
        // Stale at once: listed again at the next rounds.
        yield* rounds(2)
        expect((yield* node.asked).lists).toBe(3)
        // A minute of rounds: a listing at each of them would be 21; backing off (2, 4, 8, 16, 32 s), 6.
        yield* rounds(18)
        expect((yield* node.asked).lists).toBe(6)
      }),
    )
  }

  it.scoped("a listing without a ttl (a 2025-era server) is asked again after a minute", () =>
    Effect.gen(function* () {
      const node = yield* setup({ p1: up(["echo"]) })
      yield* rounds(19)
      expect((yield* node.asked).lists).toBe(1)
      // 69 s: past the minute and its jitter.
      yield* rounds(4)
      expect((yield* node.asked).lists).toBe(2)
    }),
  )
})

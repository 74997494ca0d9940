/**
 * ToolListings over a fake PeerMcp on the test clock: what `find_remote_tools` and `describe_remote_tool` ask of a
 * peer. A listing is served as held while its ttlMs says it is fresh and asked again after; a hostile ttl is bounded
 * (0 and negative to the floor, huge to the ceiling), an absent one is the floor; `refresh` asks at once; a failed
 * listing is not held; each agent (and the node) has listings of its own; calls that find a listing under way wait
 * for it, and list on their own if its caller gives up.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Redacted, Ref, TestClock } from "effect"
import type * as AgentScope from "../../../src/domain/AgentScope.js"
import * as ListingFreshness from "../../../src/domain/ListingFreshness.js"
import * as PeerTools from "../../../src/domain/PeerTools.js"
import * as ToolListingsLive from "../../../src/layers/toollistings/ToolListingsLive.js"
import { CurrentAgent } from "../../../src/services/agents/CurrentAgent.js"
import { PeerMcp, PeerMcpError } from "../../../src/services/mcp/PeerMcp.js"
import { ToolListings } from "../../../src/services/toollistings/ToolListings.js"

/** A tool as PeerMcp lists it: bounded and cleaned, beside its definition as sent. */
const tool = (name: string): PeerTools.Listed => {
  const listed = PeerTools.listed({ name, inputSchema: { type: "object" } })
  if (listed === undefined) throw new Error(`${name} is out of bounds`)
  return listed
}

/** A peer whose service lists `tools` with `ttlMs` (or fails while `down`); `lists` counts what it was asked. */
const setup = (ttlMs: number | undefined) =>
  Effect.gen(function* () {
    const lists = yield* Ref.make(0)
    const down = yield* Ref.make(false)
    /** While set, a listing waits for it to open. */
    const gate = yield* Ref.make<Deferred.Deferred<void> | undefined>(undefined)
    const mcp = PeerMcp.of({
      listTools: () =>
        Effect.zipRight(
          Ref.update(lists, (n) => n + 1),
          Effect.flatMap(Ref.get(gate), (g) => (g === undefined ? Effect.void : Deferred.await(g))).pipe(
            Effect.zipRight(Ref.get(down)),
            Effect.flatMap((isDown) =>
              isDown
                ? Effect.fail(new PeerMcpError({ reason: "unreachable", message: "gone" }))
                : Effect.succeed({ tools: [tool("echo")], ttlMs }),
            ),
          ),
        ),
      callTool: () => Effect.die("not used"),
      sessions: Effect.succeed(0),
    })
    const listings = yield* Layer.build(ToolListingsLive.layer.pipe(Layer.provide(Layer.succeed(PeerMcp, mcp)))).pipe(
      Effect.map(Context.get(ToolListings)),
    )
    return {
      get: (refresh = false) => listings.get("p1", "demo", "5 seconds", { refresh }),
      lists: Ref.get(lists),
      down: (value: boolean) => Ref.set(down, value),
      /** Listings wait from now until the returned effect opens the gate. */
      hold: Effect.gen(function* () {
        const g = yield* Deferred.make<void>()
        yield* Ref.set(gate, g)
        return Effect.zipRight(Ref.set(gate, undefined), Deferred.succeed(g, undefined))
      }),
    }
  })

const later = (ms: number) => TestClock.adjust(ms)

/** Lets forked fibers run until `done` holds (no time passes on the test clock). */
const until = (done: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1_000 && !(yield* done); i++) yield* Effect.yieldNow()
    expect(yield* done).toBe(true)
  })

const scope: AgentScope.Scope = {
  agent: "a",
  services: [],
  tools: [],
  models: [],
  methods: [],
  paths: [],
  labels: {},
  expiresAtMs: 0,
}

const agent = (token: string) => CurrentAgent.of({ scope, token: Redacted.make(token) })

describe("tool listings", () => {
  it.scoped("a listing with ttlMs is held within it and asked again after it", () =>
    Effect.gen(function* () {
      const peer = yield* setup(20_000)
      expect((yield* peer.get()).fetched).toBe(true)
      yield* later(19_999)
      expect((yield* peer.get()).fetched).toBe(false)
      expect(yield* peer.lists).toBe(1)
      yield* later(1)
      expect((yield* peer.get()).fetched).toBe(true)
      expect(yield* peer.lists).toBe(2)
    }),
  )

  it.scoped("refresh asks again while the listing is fresh", () =>
    Effect.gen(function* () {
      const peer = yield* setup(600_000)
      yield* peer.get()
      expect((yield* peer.get(true)).fetched).toBe(true)
      expect(yield* peer.lists).toBe(2)
    }),
  )

  for (const ttlMs of [0, -1, undefined]) {
    it.scoped(`a ttlMs of ${ttlMs} is held for the floor, ${ListingFreshness.FLOOR_MS} ms`, () =>
      Effect.gen(function* () {
        const peer = yield* setup(ttlMs)
        yield* peer.get()
        yield* later(ListingFreshness.FLOOR_MS - 1)
        expect((yield* peer.get()).fetched).toBe(false)
        yield* later(1)
        expect((yield* peer.get()).fetched).toBe(true)
        expect(yield* peer.lists).toBe(2)
      }),
    )
  }

  it.scoped("a huge ttlMs is held for the ceiling, ten minutes", () =>
    Effect.gen(function* () {
      const peer = yield* setup(Number.MAX_SAFE_INTEGER)
      yield* peer.get()
      yield* later(ListingFreshness.CEILING_MS - 1)
      expect((yield* peer.get()).fetched).toBe(false)
      yield* later(1)
      expect((yield* peer.get()).fetched).toBe(true)
    }),
  )

  it.scoped("a failed listing is not held, and drops the one that was", () =>
    Effect.gen(function* () {
      const peer = yield* setup(1_000)
      yield* peer.get()
      yield* later(1_000)
      yield* peer.down(true)
      expect((yield* Effect.either(peer.get()))._tag).toBe("Left")
      yield* peer.down(false)
      expect((yield* peer.get()).fetched).toBe(true)
      expect(yield* peer.lists).toBe(3)
    }),
  )

  it.scoped("each agent, and the node, has listings of its own", () =>
    Effect.gen(function* () {
      const peer = yield* setup(600_000)
      yield* peer.get()
      const asA = yield* Effect.provideService(peer.get(), CurrentAgent, agent("token-a"))
      const asB = yield* Effect.provideService(peer.get(), CurrentAgent, agent("token-b"))
      const asAAgain = yield* Effect.provideService(peer.get(), CurrentAgent, agent("token-a"))
      expect([asA.fetched, asB.fetched, asAAgain.fetched]).toEqual([true, true, false])
      expect((yield* peer.get()).fetched).toBe(false)
      expect(yield* peer.lists).toBe(3)
    }),
  )

  it.scoped("calls that find nothing fresh while a listing is under way wait for it: the peer is asked once", () =>
    Effect.gen(function* () {
      const peer = yield* setup(20_000)
      const open = yield* peer.hold
      const first = yield* Effect.fork(peer.get())
      yield* until(Effect.map(peer.lists, (n) => n === 1))
      const second = yield* Effect.fork(peer.get())
      yield* open
      expect((yield* Fiber.join(first)).tools.map((t) => t.tool.name)).toEqual(["echo"])
      expect((yield* Fiber.join(second)).tools.map((t) => t.tool.name)).toEqual(["echo"])
      expect(yield* peer.lists).toBe(1)
    }),
  )

  it.scoped("a call waiting on a listing whose caller gave up lists on its own", () =>
    Effect.gen(function* () {
      const peer = yield* setup(20_000)
      const open = yield* peer.hold
      const first = yield* Effect.fork(peer.get())
      yield* until(Effect.map(peer.lists, (n) => n === 1))
      const second = yield* Effect.fork(peer.get())
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(first)
      yield* until(Effect.map(peer.lists, (n) => n === 2))
      yield* open
      expect((yield* Fiber.join(second)).fetched).toBe(true)
      expect(yield* peer.lists).toBe(2)
    }),
  )
})

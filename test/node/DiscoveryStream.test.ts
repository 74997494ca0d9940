/**
 * Discovery with a slow peer: S's catalog holds every question until the test lets it answer. Over SSE a result is
 * sent as soon as it is found, so B's arrives while S is still held; `timeout` ends a search without waiting for S.
 * Both are shown by order (what the client had received when S was let go), never by measuring time.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Fiber, Layer } from "effect"
import { PROTOCOL } from "../../src/p2p/CatalogProtocol.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, tcp, tokenHeader } from "./support.js"

interface Row {
  readonly peer_id: string
  readonly srv_name: string
}

type Handler = (...args: ReadonlyArray<unknown>) => unknown

class Mesh extends Context.Tag("test/DiscoveryStreamMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly bId: string
    readonly sId: string
    /** Holds S's catalog answers from now until the returned effect runs. */
    readonly hold: Effect.Effect<Effect.Effect<void>>
  }
>() {}

const service = (name: string, url: string) => ({
  name,
  type: "mcp" as const,
  description: "",
  target_url: url,
  env: {},
})

const member = (node: NodeHarness.NodeHarness) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member"
      ? Effect.succeed(Context.get(phase.context as Context.Context<MeshHost>, MeshHost))
      : Effect.dieMessage("not a member"),
  )

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const tools = yield* Backends.mcp(["echo"])
    const cp = yield* Harness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["*"] }] })
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [service("fast", `${tools.url}/mcp`)] },
    })
    const s = yield* NodeHarness.make(cp, {
      file: { labels: {}, egress: { require_labels: {} }, services: [service("slow", `${tools.url}/mcp`)] },
    })
    const a = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected, s.connected], { concurrency: "unbounded" })
    yield* eventually(
      60,
      Effect.map(tcp(a, "/mesh/service/discover?type=mcp&timeout=5s"), (r) => r.json as ReadonlyArray<Row>),
      (rows) => rows.length === 2,
    )

    // S's catalog handler, wrapped: while a hold is on, each question waits for its release, then is answered.
    const hostS = yield* member(s)
    const registrar = (hostS.libp2p as unknown as { components: { registrar: { getHandler: (p: string) => unknown } } })
      .components.registrar
    const original = registrar.getHandler(PROTOCOL) as { handler: Handler; options: Record<string, unknown> }
    let gate: Promise<void> = Promise.resolve()
    yield* Effect.promise(() => hostS.libp2p.unhandle(PROTOCOL))
    yield* Effect.promise(() =>
      hostS.libp2p.handle(
        PROTOCOL,
        (...args: ReadonlyArray<unknown>) => {
          void gate.then(() => original.handler(...args))
        },
        original.options,
      ),
    )
    const hold = Effect.gen(function* () {
      const released = yield* Deferred.make<void>()
      gate = Effect.runPromise(Deferred.await(released))
      return Deferred.succeed(released, undefined).pipe(Effect.asVoid)
    })
    return { a, bId: yield* b.peerId, sId: yield* s.peerId, hold }
  }),
)

/** Reads an SSE discovery answer event by event; `onEvent` runs on each as it arrives. */
const streamed = (node: NodeHarness.NodeHarness, query: string, onEvent: (name: string, data: unknown) => void) =>
  Effect.promise(async () => {
    const response = await fetch(`${node.url}/mesh/service/discover?stream=true&${query}`, {
      headers: tokenHeader(node),
    })
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let buffered = ""
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffered += decoder.decode(value, { stream: true })
      let end = buffered.indexOf("\n\n")
      while (end >= 0) {
        const lines = buffered.slice(0, end).split("\n")
        buffered = buffered.slice(end + 2)
        const name = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message"
        onEvent(name, JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "null"))
        end = buffered.indexOf("\n\n")
      }
    }
  })

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(2) })("discovery with a slow peer", (it) => {
  it.effect("SSE: the fast peer's result arrives while the slow one is held, the slow one's once it answers", () =>
    Effect.gen(function* () {
      const { a, bId, sId, hold } = yield* Mesh
      const release = yield* hold
      const seen: Array<string> = []
      yield* streamed(a, "type=mcp&timeout=60s", (name, data) => {
        const peer = (data as Row).peer_id
        seen.push(name === "done" ? "done" : peer === bId ? "fast" : peer === sId ? "slow" : "other")
        // S is let go only once B's result has reached the client: a buffered answer would never get here first.
        if (peer === bId) Effect.runSync(release)
      })
      expect(seen).toEqual(["fast", "slow", "done"])
    }),
  )

  it.effect("timeout ends a search without the slow peer; a search still running when it answers includes it", () =>
    Effect.gen(function* () {
      const { a, bId, sId, hold } = yield* Mesh
      const release = yield* hold
      const names = (reply: { json: unknown }) => (reply.json as ReadonlyArray<Row>).map((r) => r.peer_id)
      // Both searches ask S; S is let go only once the short one has answered. The long one, still waiting on S,
      // then gets its result: the short one ended on its own timeout, not on S or on the catalog's own deadline.
      const long = yield* tcp(a, "/mesh/service/discover?type=mcp&timeout=60s").pipe(Effect.fork)
      const short = yield* tcp(a, "/mesh/service/discover?type=mcp&timeout=1s")
      yield* release
      expect(short.status).toBe(200)
      expect(names(short)).toEqual([bId])
      const complete = yield* Fiber.join(long)
      expect(complete.status).toBe(200)
      expect(names(complete).sort()).toEqual([bId, sId].sort())
    }),
  )
})

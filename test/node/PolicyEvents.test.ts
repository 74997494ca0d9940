/**
 * Signed `policy_update` events that a member captured and replays: a control plane, a router and nodes in this
 * process. B records the event the control plane publishes when the policy changes and republishes it (any member
 * can: gossip only checks that the event is signed). A, holding that policy already, asks the control plane for
 * nothing, and after a restart still takes the event for the old one it is.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Either, Fiber, Layer, Option, Ref, Stream } from "effect"
import * as MeshEventCodec from "../../src/domain/MeshEventCodec.js"
import { Membership } from "../../src/services/member/Membership.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import { PolicyView } from "../../src/services/node/PolicyView.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { eventually, tcp } from "./support.js"

const policy = (services: ReadonlyArray<string>) => ({
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: services, allowed_targets: ["*"] }],
  bindings: [],
})

/** No periodic read during the test: every `GET /policies` counted is one an event asked for. */
const QUIET = { overrides: { syncInterval: Duration.hours(1) } }

const memberService = <I, S>(node: NodeHarness.NodeHarness, tag: Context.Tag<I, S>) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member"
      ? Effect.succeed(Context.get(phase.context as Context.Context<I>, tag))
      : Effect.dieMessage("the node is not a member"),
  )

class Mesh extends Context.Tag("test/PolicyEventsMesh")<
  Mesh,
  {
    readonly cp: ControlPlaneHarness.ControlPlaneHarness
    readonly b: NodeHarness.NodeHarness
    /** The signed policy_update event B captured, and the policy version it announces. */
    readonly captured: Uint8Array
    readonly version: number
  }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, policy(["mcp://one"]))
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, QUIET)
    yield* b.connected
    const hostB = yield* memberService(b, MeshHost)
    const seen = yield* Ref.make<ReadonlyArray<Uint8Array>>([])
    const listening = yield* hostB.subscribe(MeshEventCodec.TOPIC).pipe(
      Stream.runForEach((message) => Ref.update(seen, (all) => [...all, message.data])),
      Effect.forkScoped,
    )
    // The control plane publishes once a router holds a lease; change the policy until B has heard it.
    let round = 0
    const captured = yield* eventually(
      60,
      Effect.gen(function* () {
        round += 1
        if (round % 20 === 1) yield* setPolicy(cp, policy([`mcp://v${round}`]))
        return (yield* Ref.get(seen)).at(-1)
      }),
      (event) => event !== undefined,
    )
    yield* Fiber.interrupt(listening)
    if (captured === undefined) return yield* Effect.dieMessage("no event captured")
    const decoded = MeshEventCodec.decode(
      captured,
      yield* (yield* memberService(b, Membership)).trustedKeys,
      yield* Clock.currentTimeMillis,
    )
    if (Either.isLeft(decoded) || decoded.right.type !== "policy_update") {
      return yield* Effect.dieMessage("the captured event is no policy_update")
    }
    const version = decoded.right.sequence
    return { cp, b, captured, version }
  }),
)

/** `GET /policies` answered so far. */
const policyReads = (cp: ControlPlaneHarness.ControlPlaneHarness) =>
  Effect.promise(() =>
    fetch(`${cp.url}/metrics`)
      .then((response) => response.text())
      .then((text) =>
        text
          .split("\n")
          .filter(
            (line) => line.startsWith("mesh_control_plane_http_requests_total{") && line.includes('route="/policies"'),
          )
          .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0),
      ),
  )

/** A's count of policy_update events by outcome. */
const outcomes = (a: NodeHarness.NodeHarness) =>
  Effect.map(tcp(a, "/metrics"), (reply) => {
    const count = (outcome: string) =>
      reply.text
        .split("\n")
        .filter(
          (line) =>
            line.startsWith("mesh_node_mesh_events_total{") &&
            line.includes('type="policy_update"') &&
            line.includes(`outcome="${outcome}"`),
        )
        .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0)
    return { applied: count("applied"), replayed: count("replayed") }
  })

describe("policy_update events", () => {
  layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(3) })((it) => {
    it.effect(
      "replayed 40 times, an event A holds the policy of asks for nothing; after a restart it is still old",
      () =>
        Effect.gen(function* () {
          const { cp, b, captured, version } = yield* Mesh
          const hostB = yield* memberService(b, MeshHost)
          const dataDir = yield* NodeHarness.tempDir
          const replay = (times: number) =>
            Effect.forEach(Array.from({ length: times }), () => hostB.publish(MeshEventCodec.TOPIC, captured), {
              discard: true,
            })

          yield* Effect.scoped(
            Effect.gen(function* () {
              const a = yield* NodeHarness.make(cp, { ...QUIET, overrides: { ...QUIET.overrides, dataDir } })
              yield* a.connected
              const view = yield* memberService(a, PolicyView)
              yield* eventually(
                60,
                Effect.map(view.current, Option.match({ onNone: () => 0, onSome: (s) => s.version })),
                (held) => held === version,
              )
              // Gossip reaches A once its subscription is known: replay until A has seen the event once.
              yield* eventually(60, Effect.zipRight(replay(1), outcomes(a)), (seen) => seen.applied + seen.replayed > 0)
              const before = yield* outcomes(a)
              const reads = yield* policyReads(cp)
              yield* replay(40)
              yield* eventually(60, outcomes(a), (seen) => seen.replayed >= before.replayed + 40)
              // Each one was handled; none made A read the policy again.
              expect(yield* policyReads(cp)).toBe(reads)
            }),
          )

          // The same data folder: the node remembers the last event it applied.
          const again = yield* NodeHarness.make(cp, { ...QUIET, overrides: { ...QUIET.overrides, dataDir } })
          yield* again.connected
          const restarted = yield* eventually(
            60,
            Effect.zipRight(replay(1), outcomes(again)),
            (seen) => seen.applied + seen.replayed > 0,
          )
          expect(restarted.applied).toBe(0)
        }).pipe(Effect.scoped),
    )
  })
})

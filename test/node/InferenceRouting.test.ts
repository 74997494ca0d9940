/**
 * Inference routing a provider cannot capture or stall: a control plane, a router and four nodes in this process.
 * B, C and D each publish a provider of model `m`: B's never answers (not even a response head), C's answers, and
 * D is a peer the mesh policy does not let A call (it announces `m` with no load like the others); E serves another
 * model and announces `m` all the same. B is given up on after A's time-to-headers limit, D and E are never sent
 * anything, and every request from A lands on C.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option } from "effect"
import * as ServiceAnnouncement from "../../src/domain/ServiceAnnouncement.js"
import * as ServiceKeys from "../../src/domain/ServiceKeys.js"
import { Discovery } from "../../src/services/discovery/Discovery.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import { PolicyView } from "../../src/services/node/PolicyView.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { type OpenAiBackend, openAi } from "../support/openai.js"
import { eventually, tcp, tokenHeader } from "./support.js"

const policy = (targets: ReadonlyArray<string>) => ({
  roles: [
    { name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["inference://*"], allowed_targets: targets },
  ],
  bindings: [],
})

const provider = (name: string, url: string) => ({
  name,
  type: "inference" as const,
  description: "",
  target_url: url,
  env: {},
})

class Mesh extends Context.Tag("test/InferenceRoutingMesh")<
  Mesh,
  {
    readonly a: NodeHarness.NodeHarness
    readonly b: NodeHarness.NodeHarness
    readonly cId: string
    readonly dId: string
    readonly bravo: OpenAiBackend
    readonly charlie: OpenAiBackend
    readonly delta: OpenAiBackend
    readonly e: NodeHarness.NodeHarness
    readonly echo: OpenAiBackend
  }
>() {}

const memberService = <I, S>(node: NodeHarness.NodeHarness, tag: Context.Tag<I, S>) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member"
      ? Effect.succeed(Context.get(phase.context as Context.Context<I>, tag))
      : Effect.dieMessage("the node is not a member"),
  )

const policyVersion = (node: NodeHarness.NodeHarness) =>
  Effect.flatMap(memberService(node, PolicyView), (view) =>
    Effect.map(view.current, Option.match({ onNone: () => 0, onSome: (s) => s.version })),
  )

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const bravo = yield* openAi({ name: "bravo", models: ["m"], silent: ["m"] })
    const charlie = yield* openAi({ name: "charlie", models: ["m"] })
    const delta = yield* openAi({ name: "delta", models: ["m"] })
    const echo = yield* openAi({ name: "echo", models: ["other"] })
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, policy(["*"]))
    yield* RouterHarness.make(cp)
    const node = (name: string, backend?: OpenAiBackend) =>
      NodeHarness.make(cp, {
        file: {
          labels: { name },
          egress: { require_labels: {} },
          services: backend === undefined ? [] : [provider(name, backend.url)],
        },
        // Not sub-second, and short enough for ten requests to meet B's silence a few times.
        overrides: { inferenceHeadersTimeout: Duration.seconds(3) },
      })
    const [a, b, c, d, e] = yield* Effect.all(
      [node("a"), node("bravo", bravo), node("charlie", charlie), node("delta", delta), node("echo", echo)],
      { concurrency: "unbounded" },
    )
    yield* Effect.forEach([a, b, c, d, e], (n) => n.connected, { concurrency: "unbounded", discard: true })
    // A finds all three providers while the policy still lets it call every one of them.
    yield* eventually(
      60,
      tcp(a, "/mesh/service/discover?type=inference&timeout=5s").pipe(
        Effect.map((reply) => (reply.json as ReadonlyArray<{ srv_name: string }>).map((row) => row.srv_name).sort()),
      ),
      (names) => names.join() === "bravo,charlie,delta,echo",
    )
    yield* eventually(60, tcp(a, "/v1/models").pipe(Effect.map((reply) => reply.status)), (status) => status === 200)
    // Now D is no target of anyone's; A's copy of the policy says so once it has the new version.
    const before = yield* policyVersion(a)
    const ids = yield* Effect.all([a.peerId, b.peerId, c.peerId, e.peerId])
    const dId = yield* d.peerId
    yield* setPolicy(cp, policy(ids.map((id) => `node:${id}`)))
    yield* eventually(60, policyVersion(a), (version) => version > before)
    return { a, b, cId: ids[2], dId, bravo, charlie, delta, e, echo }
  }),
)

const complete = (a: NodeHarness.NodeHarness, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    fetch(`${a.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...tokenHeader(a), "content-type": "application/json", ...headers },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      // Without a time-to-headers limit a request held by B would wait forever: fail the test instead.
      signal: AbortSignal.timeout(40_000),
    }).then(
      async (response) => ({
        status: response.status,
        provider: response.headers.get("x-mesh-provider"),
        text: await response.text(),
      }),
      (error: unknown) => ({ status: 0, provider: null, text: String(error) }),
    ),
  )

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(5) })((it) => {
  it.effect("a provider that sends no response head is given up on after the time-to-headers limit", () =>
    Effect.gen(function* () {
      const { a, bravo } = yield* Mesh
      const [before, closed] = [bravo.count("m"), bravo.silentClosed()]
      // Only B attests name=bravo: nothing else to fall back on.
      const answer = yield* complete(a, { "x-mesh-required-labels": "name=bravo" })
      expect(answer.status).toBe(503)
      expect(answer.text).toContain("did not answer (no response head within 3s)")
      expect(bravo.count("m")).toBe(before + 1)
      // The stream was reset, so B closed its request to the provider.
      yield* eventually(20, Effect.sync(bravo.silentClosed), (n) => n === closed + 1)
    }),
  )

  it.effect("a local provider that sends no response head is given up on after the limit, its request closed", () =>
    Effect.gen(function* () {
      const { b, bravo } = yield* Mesh
      const [before, closed] = [bravo.count("m"), bravo.silentClosed()]
      // B's own provider is the only one attesting name=bravo.
      const answer = yield* complete(b, { "x-mesh-required-labels": "name=bravo" })
      expect(answer.status).toBe(503)
      expect(answer.text).toContain("local service bravo did not answer (no response head within 3s)")
      expect(bravo.count("m")).toBe(before + 1)
      yield* eventually(20, Effect.sync(bravo.silentClosed), (n) => n === closed + 1)
    }),
  )

  it.effect("B hangs, C answers, D is denied by the policy, E does not list the model: 10 of 10 from A land on C", () =>
    Effect.gen(function* () {
      const { a, cId, dId, charlie, delta, e, echo } = yield* Mesh
      // E serves only `other`, yet announces `m` with no load: A hears it, as gossip would tell anyone.
      const eId = yield* e.peerId
      const hostE = yield* memberService(e, MeshHost)
      const discoveryA = yield* memberService(a, Discovery)
      const claim = Effect.suspend(() =>
        hostE.publish(
          ServiceKeys.topic("inference", "m"),
          ServiceAnnouncement.encode({
            peerId: eId,
            type: "inference",
            service: "echo",
            keys: ["m"],
            labels: { name: "echo" },
            activeRequests: 0,
            announcedAtMs: Date.now(),
          }),
        ),
      )
      yield* eventually(60, Effect.zipRight(claim, discoveryA.announcers("inference", "m")), (heard) =>
        heard.some((h) => h.peerId === eId),
      )
      const answers = yield* Effect.forEach(Array.from({ length: 10 }), () => complete(a))
      expect(answers.map((answer) => [answer.status, answer.provider])).toEqual(
        Array.from({ length: 10 }, () => [200, cId]),
      )
      expect(charlie.count("m")).toBe(10)
      // E's own model list does not hold `m`: it was never sent one.
      expect(echo.count("m")).toBe(0)
      // D was never sent a completion: A's own copy of the policy left it out, before anything was sent.
      expect(delta.count("m")).toBe(0)
      const metrics = yield* tcp(a, "/metrics")
      expect(metrics.text).toMatch(
        new RegExp(`mesh_node_inference_fallbacks_total\\{model="m",provider="${dId}",reason="policy"\\} [1-9]`),
      )
    }),
  )
})

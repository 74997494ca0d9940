/**
 * Members on one flat network (loopback here, as on a LAN or in one VPC) talk directly: A's first request to B goes
 * through the router's relay (nothing has told A an address of B yet), and the path is then made direct by A or B
 * dialling the other's own addresses, which identify over the relayed connection told it. A control plane, a router
 * and two nodes in this process, real libp2p and HTTP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { testBackend } from "./backends.js"
import { eventually, tcp, tokenHeader } from "./support.js"

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["inference://*"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

interface PeerView {
  readonly paths: ReadonlyArray<string>
  readonly hole_punch: { readonly result: string; readonly how: string | null } | null
}

const memberService = <I, S>(node: NodeHarness.NodeHarness, tag: Context.Tag<I, S>) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member"
      ? Effect.succeed(Context.get(phase.context as Context.Context<I>, tag))
      : Effect.dieMessage("the node is not a member"),
  )

describe("a flat network", () => {
  it.live("two members' path is direct after their first (relayed) exchange, and requests take it", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const backend = yield* testBackend
        const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
        yield* setPolicy(cp, POLICY)
        yield* RouterHarness.make(cp)
        const b = yield* NodeHarness.make(cp, {
          file: {
            labels: {},
            egress: { require_labels: {} },
            services: [{ name: "echo", type: "inference", description: "", target_url: backend.url, env: {} }],
          },
        })
        const a = yield* NodeHarness.make(cp)
        yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
        const [aId, bId] = yield* Effect.all([a.peerId, b.peerId])
        const ask = tcp(a, `/mesh/${bId}/inference/echo/echo`, { method: "POST", headers: tokenHeader(a), body: "hi" })

        expect((yield* ask).status).toBe(200)
        const view = (node: NodeHarness.NodeHarness, peer: string) =>
          Effect.map(tcp(node, `/debug/connectivity?peer=${peer}`), (r) => (r.json as { peer: PeerView }).peer)
        // The first exchange opened a relayed connection (kept as the fallback); a direct one joins it.
        const seen = yield* eventually(20, view(a, bId), (peer) => peer.paths.includes("direct"))
        expect(seen.paths).toContain("relayed")
        // Whichever side started the upgrade records how: by dialling the peer's own address, not a hole punch.
        const starter = aId < bId ? view(a, bId) : view(b, aId)
        expect((yield* eventually(10, starter, (peer) => peer.hole_punch?.result === "direct")).hole_punch).toEqual(
          expect.objectContaining({ result: "direct", how: "dialled" }),
        )
        // What every exchange uses from now on: the direct connection, on both sides.
        for (const [node, peer] of [
          [a, bId],
          [b, aId],
        ] as const) {
          const host = yield* memberService(node, MeshHost)
          const open = yield* eventually(10, host.connections(peer), (all) => all[0]?.limits === undefined)
          expect(open[0]?.remoteAddr.toString()).not.toContain("/p2p-circuit")
        }
        expect((yield* ask).status).toBe(200)
      }),
    ),
  )
})

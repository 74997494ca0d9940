import { describe, expect, it } from "@effect/vitest"
import { Effect, LogLevel } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { seriesValue } from "../support/metrics.js"
import { eventually, tcp } from "./support.js"

describe("node diagnostics", () => {
  it.live("debug routes report routers, addresses, the credential's facts and recent logs, never a secret", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        const router = yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp, {
          file: { labels: {}, egress: { require_labels: {} }, services: [] },
          logLevel: LogLevel.Info,
        })
        yield* node.connected
        const peerId = yield* node.peerId

        const connectivity = yield* tcp(node, "/debug/connectivity")
        expect(connectivity.json).toMatchObject({
          phase: "member",
          connected: true,
          routers: [{ peer_id: router.peerId, connected: true, authenticated: true, last_error: null }],
        })
        const network = (yield* tcp(node, "/debug/network-info")).json as { addresses: ReadonlyArray<string> }
        expect(network.addresses.length).toBeGreaterThan(0)
        expect(network.addresses.every((a) => a.endsWith(`/p2p/${peerId}`))).toBe(true)
        const token = (yield* tcp(node, "/debug/token-info")).json as { credential: Record<string, unknown> }
        expect(token.credential).toMatchObject({ valid: true, role: "mesh:role:node" })
        expect(JSON.stringify(token)).not.toMatch(/[A-Za-z0-9+/]{100,}/)

        const dialed = yield* tcp(node, "/debug/connect-peer", {
          method: "POST",
          headers: { "x-mesh-authentication": `Bearer ${node.apiToken}`, "content-type": "application/json" },
          body: JSON.stringify({ multiaddr: router.addresses[0] }),
        })
        expect(dialed.json).toMatchObject({ peer_id: router.peerId, role: "mesh:role:router" })
        const bad = yield* tcp(node, "/debug/connect-peer", {
          method: "POST",
          headers: { "x-mesh-authentication": `Bearer ${node.apiToken}` },
          body: "not an address",
        })
        expect(bad.status).toBe(400)

        const logs = yield* eventually(
          5,
          Effect.map(tcp(node, "/debug/logs"), (r) => r.json as { lines: ReadonlyArray<string> }),
          (l) => l.lines.some((line) => line.includes("connected to the mesh")),
        )
        const all = logs.lines.join("\n")
        expect(all).not.toContain(node.apiToken)
        expect(all).not.toMatch(/mesh-bt-[0-9a-f]{8}/)
      }),
    ),
  )

  it.live("metrics: requests by route and code, peers, routers and the credential's expiry", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        yield* tcp(node, "/debug/mesh-info")
        yield* tcp(node, "/debug/mesh-info", { headers: {} })
        const text = (yield* tcp(node, "/metrics")).text
        expect(seriesValue(text, "mesh_node_routers_connected")).toBe(1)
        expect(seriesValue(text, "mesh_node_authenticated_peers")).toBeGreaterThanOrEqual(1)
        expect(seriesValue(text, "mesh_node_credential_expiry_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000)
        expect(text).toContain('mesh_node_http_requests_total{code="200",route="debug"} 1')
        expect(text).toContain('mesh_node_http_requests_total{code="401",route="debug"} 1')
        expect(text).toContain("mesh_node_http_requests_in_flight")
        expect(text).toContain("process_resident_memory_bytes")
        expect(text).not.toContain(node.apiToken)
        expect((yield* tcp(node, "/metrics", { headers: {} })).status).toBe(401)
      }),
    ),
  )
})

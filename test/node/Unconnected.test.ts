/**
 * A node that is not connected to the mesh: before its first router and after losing the control plane and every
 * router. The spec (4.7): every route but the probes and `/debug/*` answers 503 until the node is connected, and the
 * debug routes answer even when the mesh is unreachable; `--metrics-addr` serves the probes and metrics untokened.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import { freePort } from "../../src/testing/Ports.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { eventually, mcpHeaders, mcpInitialize, type Reply, tcp, tokenHeader } from "./support.js"

const NOT_CONNECTED = { error: "unavailable", message: "not connected to the mesh" }

/** Every route the node serves only while connected, with a request each would otherwise accept. */
const gated = (node: NodeHarness.NodeHarness, peer: string) => {
  const json = { ...tokenHeader(node), "content-type": "application/json" }
  const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] })
  return [
    ["GET", "/metrics", tokenHeader(node), undefined],
    ["GET", "/v1/models", tokenHeader(node), undefined],
    ["POST", "/v1/chat/completions", json, chat],
    ["POST", "/v1/completions", json, JSON.stringify({ model: "m", prompt: "hi" })],
    ["GET", "/mesh/service/discover?type=mcp", tokenHeader(node), undefined],
    ["GET", `/mesh/${peer}/inference/llm/v1/models`, tokenHeader(node), undefined],
    ["POST", "/mcp", mcpHeaders(node), JSON.stringify(mcpInitialize)],
    ["POST", "/", mcpHeaders(node), JSON.stringify(mcpInitialize)],
  ] as const
}

const ask = (node: NodeHarness.NodeHarness, [method, path, headers, body]: ReturnType<typeof gated>[number]) =>
  tcp(node, path, { method, headers, ...(body === undefined ? {} : { body }) })

/** The node's 503: its error body, or OpenAI's error shape on /v1. */
const expectNotConnected = (path: string, reply: Reply) => {
  expect([path, reply.status]).toEqual([path, 503])
  if (path.startsWith("/v1/")) {
    expect((reply.json as { error: { message: string } }).error.message, path).toBe(NOT_CONNECTED.message)
  } else {
    expect(reply.json, path).toEqual(NOT_CONNECTED)
  }
}

const DEBUG = ["/debug/mesh-info", "/debug/connectivity", "/debug/network-info", "/debug/token-info", "/debug/logs"]

const untokened = (port: number, path: string) =>
  Effect.promise(() =>
    fetch(`http://127.0.0.1:${port}${path}`).then(async (r) => ({ status: r.status, text: await r.text() })),
  )

describe("a node not connected to the mesh", () => {
  it.live(
    "before its first router: mesh routes, /v1, discover, the proxy, /mcp, / and /metrics are 503; debug, the probes and --metrics-addr answer",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          const metricsPort = yield* Effect.promise(freePort)
          const node = yield* NodeHarness.make(cp, {
            overrides: { metricsAddress: Option.some({ host: "127.0.0.1", port: metricsPort }) },
          })
          yield* node.peerId
          const routes = gated(node, PeerKey.generate().peerId)
          for (const route of routes) expectNotConnected(route[1], yield* ask(node, route))
          for (const path of DEBUG) expect([path, (yield* tcp(node, path)).status]).toEqual([path, 200])
          expect((yield* tcp(node, "/readyz", { headers: {} })).json).toEqual({ status: "ready", mesh: "disconnected" })

          // The metrics listener: no token, every phase, and nothing but the probes and metrics.
          const scraped = yield* untokened(metricsPort, "/metrics")
          expect(scraped.status).toBe(200)
          expect(scraped.text).toContain("mesh_node_routers_connected 0")
          expect(scraped.text).not.toContain(node.apiToken)
          expect((yield* untokened(metricsPort, "/healthz")).status).toBe(200)
          expect((yield* untokened(metricsPort, "/readyz")).status).toBe(200)
          expect((yield* untokened(metricsPort, "/debug/mesh-info")).status).toBe(404)
          expect((yield* untokened(metricsPort, "/mcp")).status).toBe(404)

          // The control: once a router is connected the same requests are served.
          yield* RouterHarness.make(cp)
          yield* node.connected
          const metrics = yield* tcp(node, "/metrics")
          expect(metrics.status).toBe(200)
          expect(metrics.text).toContain("mesh_node_routers_connected 1")
          expect((yield* untokened(metricsPort, "/metrics")).text).toContain("mesh_node_routers_connected 1")
          const mcp = yield* ask(node, routes[6])
          expect(mcp.status).toBe(200)
          expect(mcp.headers.get("mcp-session-id")).toBeTruthy()
          // `POST /` is `/mcp`: the same server, a session of its own.
          const root = yield* ask(node, routes[7])
          expect(root.status).toBe(200)
          expect(root.text).toContain('"name":"mesh-node"')
          expect(root.headers.get("mcp-session-id")).toBeTruthy()
          expect(root.headers.get("mcp-session-id")).not.toBe(mcp.headers.get("mcp-session-id"))
        }),
      ),
    120_000,
  )

  it.live("with the control plane and every router gone: the debug routes still answer and say so", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cpScope = yield* Scope.make()
        const routerScope = yield* Scope.make()
        const cp = yield* Harness.make({ autoApproveEnrollment: true }).pipe(Scope.extend(cpScope))
        const router = yield* RouterHarness.make(cp).pipe(Scope.extend(routerScope))
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        const peerId = yield* node.peerId

        yield* Scope.close(routerScope, Exit.void)
        yield* Scope.close(cpScope, Exit.void)
        yield* eventually(
          30,
          Effect.map(tcp(node, "/readyz", { headers: {} }), (r) => (r.json as { mesh: string }).mesh),
          (mesh) => mesh === "disconnected",
        )
        expectNotConnected("/mcp", yield* ask(node, gated(node, router.peerId)[6]))

        for (const path of DEBUG) expect([path, (yield* tcp(node, path)).status]).toEqual([path, 200])
        const info = (yield* tcp(node, "/debug/mesh-info")).json as { peer_id: string; connected: boolean }
        expect(info).toMatchObject({ peer_id: peerId, connected: false })
        const connectivity = (yield* tcp(node, "/debug/connectivity")).json as {
          connected: boolean
          routers: ReadonlyArray<{ peer_id: string; connected: boolean }>
        }
        expect(connectivity.connected).toBe(false)
        expect(connectivity.routers).toEqual([expect.objectContaining({ peer_id: router.peerId, connected: false })])
        const token = (yield* tcp(node, "/debug/token-info")).json as { credential: Record<string, unknown> }
        expect(token.credential).toMatchObject({ role: "mesh:role:node" })
        // Dialing the gone router is a diagnosis, not a 503: the dial's failure.
        const dialed = yield* tcp(node, "/debug/connect-peer", {
          method: "POST",
          headers: { ...tokenHeader(node), "content-type": "application/json" },
          body: JSON.stringify({ multiaddr: router.addresses[0] }),
        })
        expect(dialed.status).toBe(502)
      }),
    ),
  )
})

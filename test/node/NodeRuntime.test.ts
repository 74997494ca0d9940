import { statSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import * as Forwarder from "../scale/Forwarder.js"
import { admin } from "../support/admin.js"
import * as Backends from "../support/backends.js"
import { eventually, mcpHeaders, mcpInitialize, socket, tcp } from "./support.js"

/**
 * A router in a scope of its own, so a test can stop it and start another with the same identity. It listens on a
 * port the OS gives it and announces `address`, a forwarder the test holds and points at it: starting again on the
 * stopped router's own port would race every other process on the machine for that port.
 */
const startRouter = (cp: Harness.ControlPlaneHarness, dataDir: string, address: Forwarder.Forwarder) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const router = yield* RouterHarness.make(cp, {
      dataDir: Option.some(dataDir),
      listen: ["/ip4/127.0.0.1/tcp/0"],
      externalAddresses: [`/ip4/127.0.0.1/tcp/${new URL(address.url).port}`],
    }).pipe(Scope.extend(scope))
    const listening = (
      router.host.libp2p as unknown as {
        components: { transportManager: { getAddrs: () => ReadonlyArray<{ toString: () => string }> } }
      }
    ).components.transportManager
      .getAddrs()
      .map((a) => /\/tcp\/(\d+)/.exec(a.toString())?.[1])
      .find((port) => port !== undefined)
    yield* address.target(Number(listening))
    return { router, stop: Scope.close(scope, Exit.void) }
  })

const readyMesh = (node: NodeHarness.NodeHarness) =>
  Effect.map(tcp(node, "/readyz", { headers: {} }), (r) => (r.json as { mesh: string }).mesh)

const initialize = (node: NodeHarness.NodeHarness) =>
  tcp(node, "/mcp", { method: "POST", headers: mcpHeaders(node), body: JSON.stringify(mcpInitialize) })

describe("mesh-node run", () => {
  it.live(
    "joins with a bootstrap token; routes are 503 until a router is connected, again when it stops, and served once it is back",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          const node = yield* NodeHarness.make(cp)
          yield* node.peerId
          // A member without a router: alive and ready per the spec, but every mesh route answers 503.
          expect((yield* tcp(node, "/healthz", { headers: {} })).status).toBe(200)
          const early = yield* tcp(node, "/readyz", { headers: {} })
          expect(early.status).toBe(200)
          expect(early.json).toEqual({ status: "ready", mesh: "disconnected" })
          const refused = yield* initialize(node)
          expect(refused.status).toBe(503)
          expect(refused.json).toEqual({ error: "unavailable", message: "not connected to the mesh" })
          expect((yield* socket(node, "/mesh/identity")).status).toBe(503)

          const routerDir = yield* NodeHarness.tempDir
          const nothing = yield* Backends.down
          const address = yield* Forwarder.make(nothing.port)
          const first = yield* startRouter(cp, routerDir, address)
          yield* eventually(30, readyMesh(node), (mesh) => mesh === "connected")
          const served = yield* initialize(node)
          expect(served.status).toBe(200)
          expect(served.headers.get("mcp-session-id")).toBeTruthy()
          expect((yield* socket(node, "/mesh/identity")).status).toBe(200)

          yield* first.stop
          yield* address.target(nothing.port)
          yield* eventually(10, readyMesh(node), (mesh) => mesh === "disconnected")
          expect((yield* initialize(node)).status).toBe(503)

          const second = yield* startRouter(cp, routerDir, address)
          expect(second.router.peerId).toBe(first.router.peerId)
          yield* eventually(30, readyMesh(node), (mesh) => mesh === "connected")
          expect((yield* initialize(node)).status).toBe(200)
        }),
      ),
  )

  it.live("token rules on TCP; the socket is 0600 and needs none", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        const none = yield* tcp(node, "/debug/mesh-info", { headers: {} })
        expect(none.status).toBe(401)
        expect((none.json as { error: string }).error).toBe("unauthorized")
        const wrong = yield* tcp(node, "/debug/mesh-info", {
          headers: { "x-mesh-authentication": "Bearer mesh-api-0000000000000000000000000000" },
        })
        expect(wrong.status).toBe(403)
        expect(wrong.json).toEqual({ error: "forbidden", message: "wrong API token" })
        expect((yield* tcp(node, "/debug/mesh-info")).status).toBe(200)
        // Routes that never forward take the token as a bearer too (what OpenAI-style SDKs send).
        const bearer = yield* tcp(node, "/debug/mesh-info", { headers: { authorization: `Bearer ${node.apiToken}` } })
        expect(bearer.status).toBe(200)
        // A wrong spelling of a route is no route at all, never a way around the gate.
        for (const path of ["/DEBUG/mesh-info", "/debug/mesh-info/", "//debug/mesh-info", "/debug/%6Desh-info"]) {
          expect((yield* tcp(node, path)).status, path).toBe(404)
        }
        expect((yield* tcp(node, "/healthz", { method: "POST", headers: {} })).status).toBe(405)

        expect(statSync(node.socketPath).mode & 0o777).toBe(0o600)
        const viaSocket = yield* socket(node, "/debug/mesh-info")
        expect(viaSocket.status).toBe(200)
        expect((viaSocket.json as { peer_id: string }).peer_id).toBe(yield* node.peerId)
      }),
    ),
  )

  // The spec's 5 s for a ban to take effect is an idle machine's figure; a loaded one is given longer.
  it.live("a ban through the admin API: the routers drop the node and it reports not connected", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        const peerId = yield* node.peerId
        const banned = yield* admin(cp, "POST", "/admin/revoke", { peer_id: peerId })
        expect(banned.status).toBe(200)
        yield* eventually(30, readyMesh(node), (mesh) => mesh === "disconnected")
        expect((yield* initialize(node)).status).toBe(503)
      }),
    ),
  )
})

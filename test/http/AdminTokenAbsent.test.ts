/**
 * A control plane started without an admin token cannot be administered over HTTP: every admin route (every
 * `/admin/*` route of the API, and `POST`/`PUT /policies`) answers 401 to any bearer, even one that looks like an
 * operator's, and changes nothing. The routes are read from the API definition, so a route added later is covered.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option, TestClock } from "effect"
import * as ControlPlaneConfig from "../../src/config/ControlPlaneConfig.js"
import { ControlPlaneApi } from "../../src/http/Api.js"
import { routesOf } from "../../src/http/RouteTable.js"
import * as ControlPlaneLive from "../../src/layers/ControlPlaneLive.js"
import { BootstrapTokens } from "../../src/services/enrollment/BootstrapTokens.js"
import { Nodes } from "../../src/services/nodes/Nodes.js"
import { Policy } from "../../src/services/policy/Policy.js"
import { DEFAULT_ADMIN_TOKEN, DEFAULT_ISSUER } from "../../src/testing/ControlPlaneHarness.js"
import * as DirectEnrollment from "../../src/testing/DirectEnrollment.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const DISABLED = { error: "unauthorized", message: "the admin API is disabled: no admin token is configured" }

const adminRoutes = routesOf(ControlPlaneApi).filter(
  (r) => r.path.startsWith("/admin/") || (r.path === "/policies" && r.method !== "GET"),
)

/** A body each route would accept from an operator, so only the missing token can explain a refusal. */
const bodyFor = (method: string, path: string, peerId: string): unknown =>
  method === "POST" && path === "/admin/bootstrap-tokens"
    ? { role: "mesh:role:node", autonomous_recovery: true }
    : path.endsWith("/autonomous-recovery")
      ? { enabled: true }
      : path === "/admin/revoke"
        ? { peer_id: peerId }
        : path === "/policies"
          ? { roles: [{ name: "mesh:role:node", allowedLabels: ["*"] }] }
          : undefined

describeDatabases("a control plane without an admin token", (db) => {
  it.scoped("refuses every admin route with 401 to any bearer, and changes nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const settings = ControlPlaneConfig.make({
        issuers: [DEFAULT_ISSUER],
        database: yield* db.fresh,
        enrollRateLimit: { perSecond: 0, burst: 0 },
      })
      expect(Option.isNone(settings.adminToken)).toBe(true)
      const context = yield* Layer.build(
        ControlPlaneLive.layer(settings).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))),
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("not on TCP")
      const url = `http://127.0.0.1:${address.port}`

      const node = yield* DirectEnrollment.enroll().pipe(Effect.provide(context))
      const params: Record<string, string> = { id: "bt_0000000000000000", peer_id: node.peer.peerId }
      expect(adminRoutes.length).toBeGreaterThanOrEqual(13)

      for (const route of adminRoutes) {
        const path = route.path.replace(/:([a-z_]+)/g, (_, name: string) => params[name] ?? name)
        const body = bodyFor(route.method, route.path, node.peer.peerId)
        for (const bearer of [undefined, "", DEFAULT_ADMIN_TOKEN, "undefined", "null"]) {
          const answer = yield* MeshClient.request(`${url}${path}`, {
            method: route.method,
            headers: {
              ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
              ...(body === undefined ? {} : { "content-type": "application/json" }),
            },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          })
          const what = `${route.method} ${path} with ${bearer === undefined ? "no bearer" : `bearer "${bearer}"`}`
          expect([answer.status, MeshClient.errorOf(answer)], what).toEqual([401, DISABLED])
        }
      }
      // GET /policies accepts the admin token or a node's credential; with no admin token only the credential works.
      const read = yield* MeshClient.request(`${url}/policies`, {
        headers: { authorization: `Bearer ${DEFAULT_ADMIN_TOKEN}` },
      })
      expect(read.status).toBe(401)

      // Nothing changed: no token minted, no policy, the node neither banned nor opted in to recovery.
      const state = yield* Effect.gen(function* () {
        const tokens = yield* (yield* BootstrapTokens).list()
        const policy = yield* (yield* Policy).current
        const found = yield* (yield* Nodes).find(node.peer.peerId)
        return {
          tokens: tokens.length,
          policyVersion: policy.version,
          banned: Option.map(found, (n) => n.banned),
          autonomousRecovery: Option.map(found, (n) => n.autonomousRecovery),
        }
      }).pipe(Effect.provide(context))
      expect(state).toEqual({
        tokens: 0,
        policyVersion: 0,
        banned: Option.some(false),
        autonomousRecovery: Option.some(false),
      })
    }),
  )
})

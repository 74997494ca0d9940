import type * as HttpMethod from "@effect/platform/HttpMethod"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import fc from "fast-check"
import { ControlPlaneApi } from "../../src/http/Api.js"
import * as CanonicalPath from "../../src/http/CanonicalPath.js"
import * as RouteTable from "../../src/http/RouteTable.js"
import { spellingsOf } from "../support/spellings.js"

const table = RouteTable.make([
  { method: "GET", path: "/" },
  { method: "POST", path: "/enroll" },
  { method: "GET", path: "/enroll/status" },
  { method: "DELETE", path: "/admin/bootstrap-tokens/:id" },
  { method: "POST", path: "/admin/nodes/:peer_id/unban" },
  { method: "GET", path: "/admin/nodes/status" },
  { method: "GET", path: "/admin/nodes/:peer_id" },
  { method: "*", path: "/mesh/:peer/:type/:name/*" },
  { method: "*", path: "/mesh/:peer/:type/:name" },
])

describe("RouteTable", () => {
  it("resolves a canonical target to its route pattern, with or without a query", () => {
    expect(table.resolve("GET", "/")).toBe("/")
    expect(table.resolve("POST", "/enroll")).toBe("/enroll")
    expect(table.resolve("GET", "/enroll/status?peer_id=12D3KooW")).toBe("/enroll/status")
    expect(table.resolve("DELETE", "/admin/bootstrap-tokens/bt_00ff")).toBe("/admin/bootstrap-tokens/:id")
    expect(table.resolve("POST", "/admin/nodes/12D3KooWAbC/unban")).toBe("/admin/nodes/:peer_id/unban")
  })

  it("matches the method exactly, except HEAD, which falls back to GET as the router does", () => {
    expect(table.resolve("GET", "/enroll")).toBeUndefined()
    expect(table.resolve("HEAD", "/enroll/status")).toBe("/enroll/status")
    expect(table.resolve("HEAD", "/enroll")).toBeUndefined()
  })

  it("prefers a static segment to a parameter, as the router does", () => {
    expect(table.resolve("GET", "/admin/nodes/status")).toBe("/admin/nodes/status")
    expect(table.resolve("GET", "/admin/nodes/12D3KooW")).toBe("/admin/nodes/:peer_id")
  })

  it("refuses every other spelling of a route", () => {
    for (const [method, path] of [
      ["POST", "/enroll"],
      ["GET", "/enroll/status?peer_id=x"],
      ["POST", "/admin/nodes/12D3KooWAbC/unban"],
    ] as const) {
      for (const spelling of spellingsOf(path)) {
        expect(table.resolve(method, spelling.target), `${spelling.name}: ${spelling.target}`).toBeUndefined()
      }
    }
    expect(table.resolve("POST", "*")).toBeUndefined()
  })

  it("takes parameters in any case, escaped where needed, up to 100 characters", () => {
    expect(table.resolve("DELETE", "/admin/bootstrap-tokens/BT_00FF")).toBe("/admin/bootstrap-tokens/:id")
    expect(table.resolve("DELETE", "/admin/bootstrap-tokens/a%2Fb")).toBe("/admin/bootstrap-tokens/:id")
    expect(table.resolve("DELETE", "/admin/bootstrap-tokens/%C3%A9")).toBe("/admin/bootstrap-tokens/:id")
    expect(table.resolve("DELETE", `/admin/bootstrap-tokens/${"x".repeat(100)}`)).toBe("/admin/bootstrap-tokens/:id")
    expect(table.resolve("DELETE", `/admin/bootstrap-tokens/${"x".repeat(101)}`)).toBeUndefined()
    // An escaped letter, a malformed escape, an escape that is not UTF-8, a control character, a dot segment: not a
    // canonical parameter.
    for (const id of ["b%74_00", "%zz", "%FF", "%00", "a%1Fb", "%7f", "..", ".", "%2e"]) {
      expect(table.resolve("DELETE", `/admin/bootstrap-tokens/${id}`), id).toBeUndefined()
    }
  })

  it("hands a wildcard route the rest of the path as it is, once the routed part is canonical", () => {
    expect(table.resolve("POST", "/mesh/12D3KooW/mcp/files")).toBe("/mesh/:peer/:type/:name")
    expect(table.resolve("GET", "/mesh/12D3KooW/mcp/files/a//b/")).toBe("/mesh/:peer/:type/:name/*")
    expect(table.resolve("GET", "/mesh/12D3KooW/mcp/files/")).toBe("/mesh/:peer/:type/:name/*")
    expect(table.resolve("GET", "/MESH/12D3KooW/mcp/files/a")).toBeUndefined()
    expect(table.resolve("GET", "/mesh//12D3KooW/mcp/files/a")).toBeUndefined()
    expect(table.resolve("GET", "/mesh/12D3KooW/mcp/files;x/a")).toBeUndefined()
  })
})

/** The framework router over `routes` as our servers configure it, answering with the pattern it matched. */
const frameworkRouter = (routes: ReadonlyArray<RouteTable.RouteSpec>) =>
  Effect.gen(function* () {
    let router = HttpRouter.empty
    for (const route of routes) {
      router = HttpRouter.route(route.method as HttpMethod.HttpMethod)(
        route.path as HttpRouter.PathInput,
        HttpServerResponse.text(route.path),
      )(router)
    }
    const app = yield* HttpRouter.toHttpApp(router).pipe(HttpRouter.withRouterConfig(CanonicalPath.routerConfig))
    return (method: string, target: string) =>
      app.pipe(
        Effect.provideService(
          HttpServerRequest.HttpServerRequest,
          HttpServerRequest.fromWeb(new Request("http://localhost/", { method })).modify({ url: target }),
        ),
        Effect.map((response) =>
          response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : "?",
        ),
        Effect.exit,
        Effect.map((exit) => (Exit.isSuccess(exit) ? exit.value : undefined)),
      )
  })

const words = ["admin", "ADMIN", "Admin", "enroll", "status", "bootstrap-tokens", "nodes", "unban", "refresh"]
const segment = fc.oneof(
  fc.constantFrom(...words, "", ".", "..", "%2e", "%61dmin", "bt_0f", "12D3KooWx", "a%2Fb", "%C3%A9", "x;y"),
  fc.string({ maxLength: 6 }).map(encodeURIComponent),
)
const target = fc
  .tuple(fc.array(segment, { minLength: 1, maxLength: 5 }), fc.constantFrom("", "?peer_id=x", "/"))
  .map(([parts, end]) => `/${parts.join("/")}${end}`)

describe("RouteTable and the framework router", () => {
  it.effect("agree on the route of every canonical target (control-plane routes, fixed seed)", () =>
    Effect.gen(function* () {
      const routes = RouteTable.routesOf(ControlPlaneApi)
      const table = RouteTable.make(routes)
      const router = yield* frameworkRouter(routes)
      const methods = fc.constantFrom("GET", "POST", "PUT", "DELETE", "HEAD")
      // Each route's own method and path, or another spelling of it, or a path made up of route words.
      const nearRoute = fc.constantFrom(...routes).chain((route) => {
        const path = route.path.replace(/:[a-z_]+/g, "X1_y")
        return fc.tuple(
          fc.oneof(fc.constant(route.method), methods),
          fc.oneof(fc.constant(path), fc.constantFrom(...spellingsOf(path).map((s) => s.target))),
        )
      })
      const samples = fc.sample(fc.oneof(nearRoute, fc.tuple(methods, target)), { seed: 42, numRuns: 3000 })
      const disagreements: Array<string> = []
      for (const [method, t] of samples) {
        const ours = table.resolve(method, t)
        const theirs = yield* router(method, t)
        // Where the spelling is canonical the two must agree both ways; elsewhere the table refuses first.
        const canonical = CanonicalPath.segmentsOf(t)?.every(CanonicalPath.isCanonicalSegment) === true
        if (theirs !== ours && (ours !== undefined || canonical)) {
          disagreements.push(`${method} ${t}: table ${String(ours)}, router ${String(theirs)}`)
        }
      }
      expect(disagreements).toEqual([])
      // The sample did exercise the routes, not only refusals.
      expect(samples.filter(([m, t]) => table.resolve(m, t) !== undefined).length).toBeGreaterThan(100)
    }),
  )
})

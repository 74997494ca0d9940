/**
 * Which route a request is for, decided once from the route definitions themselves and shared by every middleware
 * (metrics label, body checks, rate limits, no-store) and by the gate in front of the framework router: a request
 * this table does not resolve never reaches a handler. Matching follows `CanonicalPath`: exact, case-sensitive,
 * canonical segments only; static segments win over parameters, parameters over a trailing wildcard, and HEAD falls
 * back to GET, as the framework router does.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Chunk, Effect } from "effect"
import { isCanonicalSegment, MAX_PARAM_LENGTH, segmentsOf } from "./CanonicalPath.js"
import * as ErrorResponse from "./ErrorResponse.js"

export interface RouteSpec {
  /** An HTTP method, or `*` for any. */
  readonly method: string
  /** `/a/:param/b`, optionally ending in `/*` (the rest of the path, taken as it is). */
  readonly path: string
}

export interface RouteTable {
  /** The path pattern of the route `target` (path and query, as received) is for; undefined: no route, 404. */
  readonly resolve: (method: string, target: string) => string | undefined
}

/** Rank of a part when two routes match: lower wins at the first part where they differ. */
const STATIC = 0
const PARAM = 1
const WILDCARD = 2

interface Compiled {
  readonly method: string
  readonly path: string
  readonly parts: ReadonlyArray<{ readonly rank: number; readonly text: string }>
}

const compile = (spec: RouteSpec): Compiled => {
  const segments = spec.path === "*" ? ["*"] : (segmentsOf(spec.path) ?? [])
  return {
    method: spec.method,
    path: spec.path,
    parts: segments.map((text) => ({
      rank: text === "*" ? WILDCARD : text.startsWith(":") ? PARAM : STATIC,
      text,
    })),
  }
}

/** The ranks of the parts `route` used to match `segments`, or undefined if it does not match. */
const match = (route: Compiled, segments: ReadonlyArray<string>): ReadonlyArray<number> | undefined => {
  const ranks: Array<number> = []
  for (let i = 0; i < route.parts.length; i++) {
    const part = route.parts[i] as Compiled["parts"][number]
    // A wildcard takes whatever follows its slash, unchecked: it belongs to whoever the route forwards to.
    if (part.rank === WILDCARD) return segments.length > i ? [...ranks, WILDCARD] : undefined
    const segment = segments[i]
    if (segment === undefined || !isCanonicalSegment(segment)) return undefined
    if (part.rank === STATIC ? segment !== part.text : segment.length > MAX_PARAM_LENGTH) return undefined
    ranks.push(part.rank)
  }
  return segments.length === route.parts.length ? ranks : undefined
}

const better = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): boolean => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number)
  }
  return false
}

export const make = (specs: Iterable<RouteSpec>): RouteTable => {
  const routes = [...specs].map(compile)
  const find = (method: string, segments: ReadonlyArray<string>): string | undefined => {
    let best: { path: string; ranks: ReadonlyArray<number> } | undefined
    for (const route of routes) {
      if (route.method !== method && route.method !== "*") continue
      const ranks = match(route, segments)
      if (ranks !== undefined && (best === undefined || better(ranks, best.ranks))) best = { path: route.path, ranks }
    }
    return best?.path
  }
  return {
    resolve: (method, target) => {
      const segments = segmentsOf(target)
      if (segments === undefined) return undefined
      return find(method, segments) ?? (method === "HEAD" ? find("GET", segments) : undefined)
    },
  }
}

/** The routes of an HttpApi: every endpoint of every group. */
export const routesOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<RouteSpec> => {
  const specs: Array<RouteSpec> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => specs.push({ method: endpoint.method, path: endpoint.path }),
  })
  return specs
}

/** The table of an HttpApi. */
export const fromApi = (api: HttpApi.HttpApi.Any): RouteTable => make(routesOf(api))

/** The table of an HttpRouter's own routes (mounted sub-apps are not listed: mount them as routes instead). */
export const fromRouter = (router: HttpRouter.HttpRouter<unknown, unknown>): RouteTable =>
  make(Chunk.toReadonlyArray(router.routes).map((route) => ({ method: route.method, path: route.path })))

/** A gate in front of an app: a request no route of `table` takes is answered 404 here and never reaches it. */
export const gate =
  (table: RouteTable) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      table.resolve(request.method, request.url) === undefined
        ? Effect.succeed(ErrorResponse.body(404, "not_found", "no such route"))
        : app,
    )

/**
 * The node's routes as one table: each route names its path pattern, the label its metrics carry, who may call it
 * (`access`) and when it answers (`availability`). The same table decides which route a request is, for dispatch,
 * authentication, the 503 gate and metrics alike, so no spelling of a path can reach a handler while escaping a
 * check. Matching is exact on the raw path: case-sensitive, no decoding, no slash folding; anything else is 404.
 */
import type * as HttpMethod from "@effect/platform/HttpMethod"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, type Effect } from "effect"

/**
 * - `open`: anyone (health probes).
 * - `token`: the API token on TCP, in `X-Mesh-Authentication` or `Authorization`; nothing on the socket or mTLS.
 * - `forwarding`: as `token`, but only `X-Mesh-Authentication`: `Authorization` belongs to the service called.
 * - `strong`: the Unix socket or a verified mTLS connection only (identity evidence).
 */
export type Access = "open" | "token" | "forwarding" | "strong"

/**
 * - `always`: answers in every phase (health, debug; `/mcp` decides for itself).
 * - `member`: needs the node's identity.
 * - `connected`: needs an authenticated router connection.
 */
export type Availability = "always" | "member" | "connected"

export type Handler<R> = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  unknown,
  R | HttpServerRequest.HttpServerRequest | RouteMatch
>

export interface Route<R> {
  readonly methods: ReadonlyArray<HttpMethod.HttpMethod> | "*"
  /** Segments: literal text, `:name` for one segment, and a final `*` for the rest of the path (maybe empty). */
  readonly path: string
  readonly label: string
  readonly access: Access
  readonly availability: Availability
  readonly handler: Handler<R>
}

/** What the table found for the request being served. */
export interface Match {
  readonly label: string
  readonly params: Readonly<Record<string, string>>
  /** The raw rest of the path after a `*` pattern, with its leading slash, or "" (query not included). */
  readonly rest: string
}

export class RouteMatch extends Context.Tag("mesh/node/RouteMatch")<RouteMatch, Match>() {}

export const make = <R>(route: Route<R>): Route<R> => route

/** What the handlers of a list of routes need. */
export type Requirements<T extends ReadonlyArray<Route<unknown>>> = T[number] extends Route<infer R> ? R : never

type Lookup<R> =
  | { readonly _tag: "Found"; readonly route: Route<R>; readonly match: Match }
  | { readonly _tag: "WrongMethod"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }

interface Compiled<R> {
  readonly route: Route<R>
  readonly segments: ReadonlyArray<string>
  readonly wildcard: boolean
}

const compile = <R>(route: Route<R>): Compiled<R> => {
  const parts = route.path === "/" ? [] : route.path.slice(1).split("/")
  const wildcard = parts.at(-1) === "*"
  return { route, segments: wildcard ? parts.slice(0, -1) : parts, wildcard }
}

/** Literal segments before parameters: `/mesh/peer/:id/evidence` is tried before `/mesh/:peer/:type/:name`. */
const specificity = (c: Compiled<unknown>): string =>
  c.segments.map((s) => (s.startsWith(":") ? "1" : "0")).join("") + (c.wildcard ? "2" : "")

export const table = <R>(routes: ReadonlyArray<Route<R>>) => {
  const compiled = routes.map(compile).sort((a, b) => specificity(a).localeCompare(specificity(b)))
  return (method: string, path: string): Lookup<R> => {
    if (!path.startsWith("/")) return { _tag: "NotFound" }
    const parts = path === "/" ? [] : path.slice(1).split("/")
    const allow = new Set<string>()
    for (const c of compiled) {
      if (parts.length < c.segments.length || (!c.wildcard && parts.length !== c.segments.length)) continue
      const params: Record<string, string> = {}
      let ok = true
      for (let i = 0; i < c.segments.length; i++) {
        const pattern = c.segments[i] as string
        const part = parts[i] as string
        if (pattern.startsWith(":")) {
          if (part.length === 0) {
            ok = false
            break
          }
          params[pattern.slice(1)] = part
        } else if (pattern !== part) {
          ok = false
          break
        }
      }
      if (!ok) continue
      const methods = c.route.methods
      if (methods !== "*" && !methods.includes(method as HttpMethod.HttpMethod)) {
        for (const m of methods) allow.add(m)
        continue
      }
      const rest = c.wildcard && parts.length > c.segments.length ? `/${parts.slice(c.segments.length).join("/")}` : ""
      return { _tag: "Found", route: c.route, match: { label: c.route.label, params, rest } }
    }
    return allow.size > 0 ? { _tag: "WrongMethod", allow: [...allow] } : { _tag: "NotFound" }
  }
}

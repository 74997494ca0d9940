/**
 * Maps a request to the route pattern it matched (`/admin/enrollments/:id/approve`), the label of the per-route
 * metrics. Patterns come from the API definition itself, so a new endpoint is labelled without further work.
 */
import { HttpApi } from "@effect/platform"

interface Pattern {
  readonly method: string
  readonly path: string
  readonly regex: RegExp
}

const toRegex = (path: string): RegExp =>
  new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z0-9_]+/g, "[^/]+")}/?$`)

export const makeMatcher = (api: HttpApi.HttpApi.Any): ((method: string, pathname: string) => string) => {
  const patterns: Array<Pattern> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      patterns.push({ method: endpoint.method, path: endpoint.path, regex: toRegex(endpoint.path) })
    },
  })
  const exact = new Map(patterns.filter((p) => !p.path.includes(":")).map((p) => [`${p.method} ${p.path}`, p.path]))
  const parameterized = patterns.filter((p) => p.path.includes(":"))
  return (method, pathname) => {
    const hit = exact.get(`${method} ${pathname}`)
    if (hit !== undefined) return hit
    for (const p of parameterized) if (p.method === method && p.regex.test(pathname)) return p.path
    return "unmatched"
  }
}

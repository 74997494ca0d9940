/**
 * The one spelling of a request path that our HTTP servers route. A request target is canonical when it is in origin
 * form (`/a/b?query`) and every path segment is non-empty, is not `.` or `..`, and percent-encodes only what must be
 * (no `%61` for `a`, no malformed or non-UTF-8 escapes) and never a control character (no identifier of ours holds
 * one, and postgres refuses NUL in text); `;` and `#` never appear in the path. Route matching is then
 * exact and case-sensitive (`RouteTable`), and the framework router is told to match the same way (`routerConfig`),
 * so a request reaches a handler under one spelling only, the one every middleware (labels, limits, body checks,
 * no-store) recognises. Anything else matches no route: 404.
 *
 * Shared by every server we run (control plane, probe listeners, the node's local API).
 */
import type * as HttpRouter from "@effect/platform/HttpRouter"

/** Longest path parameter, in raw characters; the framework router refuses longer ones, so we do too. */
export const MAX_PARAM_LENGTH = 100

/** The framework router matching exactly what `RouteTable` matches: no case folding, no slash forgiveness. */
export const routerConfig: Parameters<typeof HttpRouter.setRouterConfig>[0] = {
  caseSensitive: true,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false,
  maxParamLength: MAX_PARAM_LENGTH,
}

/** RFC 3986 unreserved characters: they have one spelling, the literal one. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/

/**
 * Whether the escapes of one segment are well formed, decode to UTF-8, and stand for neither an unreserved character
 * nor a control character.
 */
const escapesCanonical = (segment: string): boolean => {
  if (!segment.includes("%")) return true
  for (let i = segment.indexOf("%"); i !== -1; i = segment.indexOf("%", i + 1)) {
    const hex = segment.slice(i + 1, i + 3)
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return false
    const byte = Number.parseInt(hex, 16)
    if (byte < 0x20 || byte === 0x7f || UNRESERVED.test(String.fromCharCode(byte))) return false
  }
  try {
    decodeURIComponent(segment)
    return true
  } catch {
    return false
  }
}

/** Whether one path segment is in canonical spelling. */
export const isCanonicalSegment = (segment: string): boolean =>
  segment.length > 0 && segment !== "." && segment !== ".." && escapesCanonical(segment)

/**
 * The raw path segments of a request target (`/a/b?x` → `["a", "b"]`, `/` → `[]`), or undefined when the target is
 * not origin form or its path holds a character a router could read as a delimiter (`;`, `#`). Segments are not
 * checked here: a wildcard route takes its tail as it is.
 */
export const segmentsOf = (target: string): ReadonlyArray<string> | undefined => {
  if (!target.startsWith("/")) return undefined
  const q = target.indexOf("?")
  const path = q === -1 ? target : target.slice(0, q)
  if (path.includes(";") || path.includes("#")) return undefined
  return path === "/" ? [] : path.slice(1).split("/")
}

/** The path of a request target without its query. */
export const pathOf = (target: string): string => {
  const q = target.indexOf("?")
  return q === -1 ? target : target.slice(0, q)
}

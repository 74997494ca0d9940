/**
 * How a request travels to a service on a peer (`/mesh/<peer>/<type>/<name>/<path>`), as pure rules: which paths are
 * refused, which headers cross each hop and what each hop adds. The caller's node and the serving node both apply
 * the path rule; headers are cleaned on both sides because neither trusts what the other side's client sent.
 */
import { Either } from "effect"
import * as Labels from "./Labels.js"
import { SERVICE_TYPES, type ServiceType } from "./ServiceType.js"

export type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
export type OutgoingHeaders = Record<string, string | Array<string>>

/** Same rule as a service name in `mesh-node.yaml`. */
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** How many rounds of percent-decoding are looked through: `%252e%252e` is `..` to a server that decodes twice. */
const DECODE_ROUNDS = 3

/**
 * What a segment may not hold, in any form a server might read it in: `;` (Tomcat, Spring and Jetty read `..;` and
 * `.;x` as `..` and `.`: path parameters) and NUL (C servers end the path there).
 */
const FORBIDDEN_IN_SEGMENT = /[;\0]/

/**
 * Refuses a raw path (no query) that a server could read as leaving the folder it names: a segment that begins with
 * `..` (`..`, `..;`, `..%00`, `...`), or a segment holding `;` or NUL, written plainly, percent-encoded (`%2e%2e`,
 * `..%3b`, `..%2f`: a decoded slash makes a segment too) or in characters that Unicode NFKC folds into dots and
 * slashes (full-width `．．`, the two-dot leader `‥`), at every round of decoding; and a path that does not decode.
 */
export const checkPath = (rawPath: string): Either.Either<void, string> => {
  let text = rawPath
  for (let round = 0; round <= DECODE_ROUNDS; round++) {
    for (const form of [text, text.normalize("NFKC")]) {
      for (const segment of form.split(/[/\\]/)) {
        if (segment.startsWith(".."))
          return Either.left("path segments beginning with '..' are refused, encoded or not")
        if (FORBIDDEN_IN_SEGMENT.test(segment)) return Either.left("path segments holding ';' or NUL are refused")
      }
    }
    if (!text.includes("%")) return Either.void
    try {
      text = decodeURIComponent(text)
    } catch {
      return Either.left("path is not valid percent-encoding")
    }
  }
  return Either.void
}

const UNRESERVED = /^[A-Za-z0-9._~-]$/

/**
 * The one form of a raw path below a service that is checked against the policy and sent to the backend: escapes of
 * unreserved characters decoded (`%70ublic` is `public`), other escapes in capitals, `.` segments removed (RFC 3986
 * §6.2.2), the rest byte for byte as it came. A path `checkPath` refuses is refused here too.
 */
export const canonicalPath = (rawPath: string): Either.Either<string, string> => {
  const checked = checkPath(rawPath)
  if (Either.isLeft(checked)) return Either.left(checked.left)
  const segments = rawPath.split("/").map((segment) =>
    segment.replace(/%([0-9A-Fa-f]{2})/g, (encoded, hex: string) => {
      const char = String.fromCharCode(Number.parseInt(hex, 16))
      return UNRESERVED.test(char) ? char : encoded.toUpperCase()
    }),
  )
  const out: Array<string> = []
  segments.forEach((segment, i) => {
    if (i === 0 || segment !== ".") out.push(segment)
    // `/a/.` is `/a/`: the folder itself.
    else if (i === segments.length - 1) out.push("")
  })
  return Either.right(out.join("/"))
}

export const isServiceType = (text: string): text is ServiceType =>
  (SERVICE_TYPES as ReadonlyArray<string>).includes(text)

/** The type and name segments of a proxy path, raw. */
export const checkService = (type: string, name: string): Either.Either<ServiceType, string> =>
  !isServiceType(type)
    ? Either.left(`unknown service type: use ${SERVICE_TYPES.join(", ")}`)
    : !SERVICE_NAME.test(name)
      ? Either.left("service name must be 1-64 letters, digits, '.', '_' or '-'")
      : Either.right(type)

/** Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus `Expect`, which each hop answers. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
])

/** Copies the headers a message carries end to end: hop-by-hop ones and those `Connection` names are left out. */
export const endToEnd = (headers: Headers, drop: ReadonlySet<string> = new Set()): OutgoingHeaders => {
  const connection = headers.connection
  const named = new Set(
    (typeof connection === "string" ? [connection] : (connection ?? []))
      .flatMap((v) => v.split(","))
      .map((t) => t.trim().toLowerCase()),
  )
  const out: OutgoingHeaders = {}
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase()
    if (value === undefined || HOP_BY_HOP.has(key) || named.has(key) || drop.has(key)) continue
    out[key] = typeof value === "string" ? value : [...value]
  }
  return out
}

/**
 * Headers a backend may read as facts about the connection or as instructions to its own front end (a TLS
 * terminator's client certificate, the client's address, a rewritten URL, an overridden method): only the hop that
 * knows may set them, so whatever a caller wrote under these names is dropped on both hops. `Forwarded` and every
 * `X-Forwarded-*` and `X-Mesh-*` go by prefix (the node writes the few it vouches for itself); the `X-SSL-*` family
 * too.
 */
const NOT_FROM_CALLER = new Set([
  "forwarded",
  "x-original-url",
  "x-rewrite-url",
  "x-original-uri",
  "x-original-host",
  "x-original-method",
  "x-host",
  "x-real-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "true-client-ip",
  "cf-connecting-ip",
  "fastly-client-ip",
  "x-client-cert",
  "x-client-cert-chain",
  "x-client-verify",
  "x-client-dn",
  "ssl-client-cert",
  "ssl-client-verify",
  "x-arr-clientcert",
  "x-amzn-mtls-clientcert",
  "x-amzn-mtls-clientcert-leaf",
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-remote-user",
  "x-remote-addr",
  "remote-user",
  "x-authenticated-user",
  "x-auth-request-user",
  "x-auth-request-email",
])
const NOT_FROM_CALLER_PREFIXES = ["x-forwarded-", "x-mesh-", "x-ssl-"]

/** Whether a header (lower case) is one only a node may set: see NOT_FROM_CALLER. */
export const nodeOnly = (name: string): boolean =>
  NOT_FROM_CALLER.has(name) || NOT_FROM_CALLER_PREFIXES.some((prefix) => name.startsWith(prefix))

/** The headers of `headers` that pass `endToEnd`, without those only a node may set. */
const fromCaller = (headers: Headers, drop: ReadonlySet<string>): OutgoingHeaders => {
  const out = endToEnd(headers, drop)
  for (const name of Object.keys(out)) if (nodeOnly(name)) delete out[name]
  return out
}

export const REQUIRED_LABELS = "x-mesh-required-labels"

/** `X-Mesh-Required-Labels: k=v[,k=v]` of a request, if it has one; a malformed or empty value is refused. */
export const requiredLabels = (headers: Headers): Either.Either<Record<string, string> | undefined, string> => {
  const value = headers[REQUIRED_LABELS]
  if (value === undefined) return Either.right(undefined)
  const parsed = Labels.parseList(typeof value === "string" ? value : value.join(","))
  if (Either.isLeft(parsed)) return Either.left(`X-Mesh-Required-Labels must be key=value[,key=value]: ${parsed.left}`)
  return Object.keys(parsed.right).length === 0
    ? Either.left("X-Mesh-Required-Labels names no label")
    : Either.right(parsed.right)
}

/** What the local client's request looked like, for the serving side (card rewrite, X-Forwarded-*). */
export interface Origin {
  /** The Host the local client used. */
  readonly host: string
  readonly proto: "http" | "https"
  /** The proxy path of the service itself: `/mesh/<peer>/<type>/<name>`. */
  readonly prefix: string
}

/**
 * The caller's node to the peer: the client's end-to-end headers (Authorization included) without cookies (every
 * cookie the client holds for the node's address is the node's: proxied services share that origin, so passing them
 * on would hand one service another's cookies) and the headers only a node sets (the label requirement and the API
 * token among them, as `X-Mesh-*`); then where the request came from.
 */
export const toPeer = (headers: Headers, origin: Origin | undefined): OutgoingHeaders => {
  const out = fromCaller(headers, new Set(["cookie"]))
  if (origin !== undefined) {
    out.host = origin.host
    out["x-forwarded-host"] = origin.host
    out["x-forwarded-proto"] = origin.proto
    out["x-forwarded-prefix"] = origin.prefix
  }
  return out
}

/** The caller as the serving side verified it: the authenticated peer of the connection. */
export interface Caller {
  readonly peerId: string
  readonly role: string
  readonly labels: Readonly<Record<string, string>>
  /** The agent the request is made for, as its token verified (AgentScope): sent as `X-Mesh-Agent`. */
  readonly agent?: string
}

const FORWARDED_VALUE = /^[\x21-\x7e]{1,255}$/

/** An `X-Forwarded-*` value the caller's node sent, if it is plain printable text. */
const forwardedValue = (headers: Headers, name: string): string | undefined => {
  const value = headers[name]
  return typeof value === "string" && FORWARDED_VALUE.test(value) ? value : undefined
}

/** The origin the caller's node reported, when it reported a whole one. */
export const originOf = (headers: Headers): Origin | undefined => {
  const host = forwardedValue(headers, "x-forwarded-host")
  const proto = forwardedValue(headers, "x-forwarded-proto")
  const prefix = forwardedValue(headers, "x-forwarded-prefix")
  if (host === undefined || prefix === undefined || !prefix.startsWith("/")) return undefined
  return { host, proto: proto === "https" ? "https" : "http", prefix }
}

/**
 * The serving node to the backend: the end-to-end headers with `Host` set to the backend (its DNS-rebinding checks
 * expect that), what the caller's node said of the original request, and the verified caller in `X-Mesh-Peer-*`.
 * `X-Forwarded-For` names the calling peer: on the mesh, its peer id is its address.
 */
export const toBackend = (headers: Headers, caller: Caller, backendHost: string): OutgoingHeaders => {
  const origin = originOf(headers)
  const out = fromCaller(headers, new Set(["host"]))
  out.host = backendHost
  out["x-forwarded-for"] = caller.peerId
  out["x-forwarded-proto"] = origin?.proto ?? "http"
  if (origin !== undefined) {
    out["x-forwarded-host"] = origin.host
    out["x-forwarded-prefix"] = origin.prefix
  }
  out["x-mesh-peer-id"] = caller.peerId
  out["x-mesh-peer-role"] = caller.role
  const labels = Object.entries(caller.labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(",")
  if (labels.length > 0) out["x-mesh-peer-labels"] = labels
  if (caller.agent !== undefined) out["x-mesh-agent"] = caller.agent
  return out
}

/**
 * A response's headers on their way back: end to end only, and no `X-Mesh-*`: the node answering the agent adds
 * its own (`X-Mesh-Provider`), and a backend must not pass for it.
 */
export const response = (headers: Headers): OutgoingHeaders => {
  const out = endToEnd(headers)
  for (const name of Object.keys(out)) if (name.startsWith("x-mesh-")) delete out[name]
  return out
}

/** A service's `target_url`, parsed once: where its requests go. */
export interface Target {
  readonly protocol: "http:" | "https:"
  /** Without brackets for IPv6, as node:http wants it. */
  readonly hostname: string
  readonly port: string
  /** `host[:port]`, for the Host header. */
  readonly host: string
  readonly path: string
  /** The target's own query, without `?`. */
  readonly query: string
}

export const target = (targetUrl: string): Target => {
  const url = new URL(targetUrl)
  return {
    protocol: url.protocol === "https:" ? "https:" : "http:",
    hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port,
    host: url.host,
    path: url.pathname,
    query: url.search.replace(/^\?/, ""),
  }
}

/**
 * The backend path of a request: the raw path below the service appended to the target's path, then the target's
 * own query and the raw query. `/mcp` + `` is `/mcp`; `/` + `/v1/models` is `/v1/models`; `/a` + `/x`, `y=1` is
 * `/a/x?y=1`. Nothing is decoded or re-encoded: the backend sees the bytes the client sent.
 */
export const backendPath = (to: Target, rawPath: string, rawQuery: string): string => {
  const base = to.path.endsWith("/") && rawPath.startsWith("/") ? to.path.slice(0, -1) : to.path
  const path = base + rawPath
  const query = to.query.length > 0 && rawQuery.length > 0 ? `${to.query}&${rawQuery}` : to.query + rawQuery
  return `${path.length === 0 ? "/" : path}${query.length > 0 ? `?${query}` : ""}`
}

/**
 * The request metadata headers of MCP's Streamable HTTP transport (revision 2026-07-28: `Mcp-Method`, `Mcp-Name`,
 * `Mcp-Param-*`, `MCP-Protocol-Version`) checked against the JSON-RPC body they mirror. Intermediaries may route or
 * decide on the headers, the server executes the body: a request whose headers say one thing and whose body another
 * is refused (400, JSON-RPC -32020 `HeaderMismatch`), so that no one can show one tool to a rule and call another.
 * Only disagreement is refused here: a header left out misleads no one, and what a backend requires it checks itself.
 * `Mcp-Param-*` values are checked for their form; which body field each mirrors is declared in the tool's schema
 * (`x-mcp-header`), which the backend, holding the schema, checks.
 */
import type * as Forwarding from "./Forwarding.js"

/**
 * The `_meta` key of a request's protocol version: the SDK's PROTOCOL_VERSION_META_KEY, written out so that the
 * proxy's serving side does not load the MCP SDK at start (docs/scale.md, "Idle weight"); a test holds them equal.
 */
export const PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"

/** JSON-RPC error code of a header that disagrees with the body (2026-07-28, `HeaderMismatch`). */
export const HEADER_MISMATCH = -32020

const PARAM = "mcp-param-"
const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/
/** What a plain header value may hold: visible ASCII and spaces, none at either end. */
const PLAIN = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/

/** Whether the request carries any header mirroring its body (then its body is read to check them). */
export const present = (headers: Forwarding.Headers): boolean =>
  Object.keys(headers).some((name) => {
    const lower = name.toLowerCase()
    return lower === "mcp-method" || lower === "mcp-name" || lower.startsWith(PARAM)
  })

const single = (headers: Forwarding.Headers, name: string): string | ReadonlyArray<string> | undefined => {
  const value = headers[name]
  return Array.isArray(value) && value.length === 1 ? value[0] : value
}

/** A header value as the client meant it: plain, or Base64 in the sentinel form; undefined when neither. */
export const decode = (value: string): string | undefined => {
  const encoded = SENTINEL.exec(value)
  if (encoded !== null) {
    const text = Buffer.from(encoded[1] ?? "", "base64")
    // Base64 that does not round-trip was not Base64.
    if (text.toString("base64").replace(/=+$/, "") !== (encoded[1] ?? "").replace(/=+$/, "")) return undefined
    const decoded = text.toString("utf8")
    return Buffer.from(decoded, "utf8").equals(text) ? decoded : undefined
  }
  if (value.startsWith("=?base64?")) return undefined
  return PLAIN.test(value) ? value : undefined
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

/** The body field `Mcp-Name` mirrors for a method, if it has one. */
const nameOf = (method: unknown, params: Record<string, unknown> | undefined): unknown => {
  if (method === "tools/call" || method === "prompts/get") return params?.name
  if (method === "resources/read") return params?.uri
  return undefined
}

/** Why the headers disagree with the body (one message or a batch), or undefined when they agree. */
export const mismatch = (headers: Forwarding.Headers, body: unknown): string | undefined => {
  const method = single(headers, "mcp-method")
  const name = single(headers, "mcp-name")
  const params = Object.keys(headers).filter((h) => h.toLowerCase().startsWith(PARAM))
  const mirrored = method !== undefined || name !== undefined || params.length > 0
  if (Array.isArray(body)) return mirrored ? "Mcp-* headers describe one request, and the body is a batch" : undefined
  const message = record(body)
  const bodyParams = record(message?.params)
  if (method !== undefined) {
    if (typeof method !== "string") return "Mcp-Method is given more than once"
    if (method !== message?.method) return `Mcp-Method ${JSON.stringify(method)} is not the body's method`
  }
  if (name !== undefined) {
    if (typeof name !== "string") return "Mcp-Name is given more than once"
    const decoded = decode(name)
    if (decoded === undefined) return "Mcp-Name is not a valid header value"
    if (decoded !== nameOf(message?.method, bodyParams)) return "Mcp-Name is not the name (or uri) in the body"
  }
  for (const header of params) {
    const value = single(headers, header)
    if (typeof value !== "string") return `${header} is given more than once`
    if (decode(value) === undefined) return `${header} is not a valid header value`
  }
  const version = single(headers, "mcp-protocol-version")
  const claimed = record(bodyParams?._meta)?.[PROTOCOL_VERSION_META_KEY]
  if (claimed !== undefined && version !== undefined && version !== claimed) {
    return "MCP-Protocol-Version is not the protocol version in the body's _meta"
  }
  return undefined
}

/** The JSON-RPC error a mismatch is answered with (HTTP 400), echoing the request's id. */
export const mismatchAnswer = (body: unknown, reason: string) => {
  const id = record(body)?.id
  return {
    jsonrpc: "2.0",
    id: typeof id === "string" || typeof id === "number" ? id : null,
    error: { code: HEADER_MISMATCH, message: `Header mismatch: ${reason}` },
  }
}

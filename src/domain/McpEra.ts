/**
 * The two eras of MCP (spec 2026-07-28, basic/versioning): modern servers take self-describing requests (the protocol
 * version, client identity and capabilities in each request's `_meta`, no session); legacy ones (2025-11-25 and
 * older) want an `initialize` handshake first. A client that speaks both tells them apart per server and caches the
 * verdict: over HTTP a modern request is sent first and only a `400 Bad Request` without a recognized modern
 * JSON-RPC error means legacy; over stdio `server/discover` is the probe and any answer that is not a modern one
 * means legacy. Pure rules only: loaded by every node at start, without the MCP SDK.
 */

export type Era = "modern" | "legacy"

/**
 * The first (and only) modern revision this node speaks. The SDK names it `FIRST_MODERN_PROTOCOL_VERSION` but does
 * not export it.
 */
export const MODERN_VERSION = "2026-07-28"

/** The `_meta` keys of a modern request's envelope (the SDK exports them; repeated here for modules without it). */
export const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
export const CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
export const CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"

/**
 * JSON-RPC errors only a modern server answers with (header mismatch, missing client capability, unsupported
 * protocol version): in a 400 they say the server is modern, and the client corrects its request instead of falling
 * back to `initialize`.
 */
export const MODERN_ERROR_CODES: ReadonlySet<number> = new Set([-32020, -32021, -32022])

/** Protocol versions are dates: a version of the modern era is this one or later. */
export const isModernVersion = (version: string | undefined): boolean =>
  version !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= MODERN_VERSION

/** The JSON-RPC error code of an answer's body (JSON, one message), if it is one. */
export const errorCodeOf = (body: string): number | undefined => {
  try {
    const message = JSON.parse(body) as { error?: { code?: unknown } }
    const code = message?.error?.code
    return typeof code === "number" ? code : undefined
  } catch {
    return undefined
  }
}

/**
 * The era an HTTP answer to a modern request shows, as the spec's Streamable HTTP backward compatibility reads it:
 * a 400 whose body is not a recognized modern error is a legacy server (fall back to `initialize`); any other answer
 * leaves the request's own outcome to read (a result, or a modern error).
 */
export const answerShowsLegacy = (status: number, body: string): boolean => {
  if (status !== 400) return false
  const code = errorCodeOf(body)
  return code === undefined || !MODERN_ERROR_CODES.has(code)
}

/** The envelope a modern request carries in its `_meta`, merged over what the request already had there. */
export const envelope = (
  meta: Readonly<Record<string, unknown>> | undefined,
  client: { readonly name: string; readonly version: string },
  capabilities: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> => ({
  ...meta,
  [PROTOCOL_VERSION_KEY]: MODERN_VERSION,
  [CLIENT_INFO_KEY]: client,
  [CLIENT_CAPABILITIES_KEY]: capabilities,
})

/** Characters a header value may carry as they are; anything else goes base64 (`=?base64?…?=`). */
const HEADER_SAFE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/

/** A value for `Mcp-Name` (or `Mcp-Param-*`), base64-wrapped when it cannot travel as plain ASCII. */
export const headerValue = (value: string): string =>
  HEADER_SAFE.test(value) ? value : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`

/** The headers of a modern POST: version, method and (for a tool call) the tool's name, mirrored from the body. */
export const requestHeaders = (method: string, name?: string): Record<string, string> => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": MODERN_VERSION,
  "mcp-method": method,
  ...(name === undefined ? {} : { "mcp-name": headerValue(name) }),
})

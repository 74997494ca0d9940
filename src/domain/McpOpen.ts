/**
 * A session opened where the service runs. A node's first request to an MCP service of a peer (a `tools/call`, a
 * `tools/list`) goes without a session and asks the serving node to open one (`OPEN`, with the protocol version the
 * caller speaks): the serving node sends the initialize and its notification to its backend on its own machine, then
 * the request in the new session, and answers with the session's id and `OPENED` (the version agreed). A first call
 * to a peer's service costs one round trip across the mesh instead of two. A serving node that cannot open one
 * answers as the service answers a request without a session (400 or 404, nothing run); the caller then opens it
 * the ordinary way. Both headers are the nodes' own: stripped from what callers send and what backends answer.
 *
 * A modern (2026-07-28) request may ask it too: the caller does not know yet which era the service speaks. A serving
 * node whose backend is modern passes the request on as it is and opens nothing (no `OPENED`); one whose backend is
 * legacy opens the session and runs the request in it, so the caller's first call is one request in either era.
 */
export const OPEN = "x-mesh-mcp-open"
export const OPENED = "x-mesh-mcp-opened"

/** MCP protocol versions are dates. */
const VERSION = /^\d{4}-\d{2}-\d{2}$/

/**
 * A header's value if it is shaped as a protocol version. Which versions the node speaks is its MCP SDK's to say
 * (OpenAtPeer checks the version agreed); this module is loaded by every node at start, the SDK only on first use.
 */
export const version = (value: string | ReadonlyArray<string> | null | undefined): string | undefined =>
  typeof value === "string" && VERSION.test(value) ? value : undefined

/** The initialize a serving node sends for its caller, as an MCP client of the service. */
export const initialize = (protocolVersion: string, clientVersion: string) => ({
  jsonrpc: "2.0" as const,
  id: 0,
  method: "initialize" as const,
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "mesh-node", version: clientVersion } },
})

export const INITIALIZED = { jsonrpc: "2.0" as const, method: "notifications/initialized" as const }

/**
 * The protocol version of a successful initialize answer, sent as JSON or as an event stream (the first event
 * whose data is the answer to id 0); undefined for anything else, an error answer included.
 */
export const agreedVersion = (contentType: string, body: string): string | undefined => {
  for (const message of messagesOf(contentType, body)) {
    const { id, result } = message as { id?: unknown; result?: { protocolVersion?: unknown } }
    if (id !== 0 || typeof result !== "object" || result === null) continue
    return version(typeof result.protocolVersion === "string" ? result.protocolVersion : undefined)
  }
  return undefined
}

/** The id of the `server/discover` a serving node sends its backend to learn its era. */
export const DISCOVER_ID = "mesh-discover"

/**
 * The versions a `server/discover` answer names (JSON or an event stream: the answer to DISCOVER_ID); undefined for
 * anything else, an error answer included.
 */
export const discoveredVersions = (contentType: string, body: string): ReadonlyArray<string> | undefined => {
  for (const message of messagesOf(contentType, body)) {
    const { id, result } = message as { id?: unknown; result?: { supportedVersions?: unknown } }
    if (id !== DISCOVER_ID || typeof result !== "object" || result === null) continue
    const versions = result.supportedVersions
    return Array.isArray(versions) ? versions.filter((v): v is string => typeof v === "string").slice(0, 64) : []
  }
  return undefined
}

/** The JSON-RPC messages of an answer sent as JSON or as an event stream (objects only). */
const messagesOf = (contentType: string, body: string): ReadonlyArray<object> => {
  const messages = contentType.includes("text/event-stream")
    ? body
        .split(/\r?\n\r?\n/)
        .map((event) =>
          event
            .split(/\r?\n/)
            .filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).trimStart())
            .join("\n"),
        )
        .filter((data) => data.length > 0)
    : [body]
  const out: Array<object> = []
  for (const data of messages) {
    try {
      const message: unknown = JSON.parse(data)
      if (typeof message === "object" && message !== null) out.push(message)
    } catch {
      // Not JSON: skipped.
    }
  }
  return out
}

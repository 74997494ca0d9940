/**
 * The calling side of a session opened where the service runs (domain/McpOpen). The SDK client is started with a
 * stand-in session id, so it sends no initialize of its own; this fetch sends the session's first request asking the
 * serving node to open it, and every later one with the id and version it answered. Requests made while the first is
 * under way wait for its answer. A serving node that opened none answers as a service answers a request without a
 * session (400, or 404 for a service it does not have: nothing ran): the request fails with NotOpened and the caller
 * opens a session the ordinary way, where the service's own answer to an initialize is met.
 *
 * The state is a field, not a Ref: everything here runs in the SDK's promises, outside any fiber, one step at a time.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js"
import * as McpOpen from "../../domain/McpOpen.js"

/** The session id the SDK transport starts with; never sent. */
export const PENDING = "mesh-opens-at-first-request"

/** The serving node did not open the session, and the request did not run. */
export class NotOpened extends Error {
  constructor() {
    super("the serving node opened no MCP session")
  }
}

type State =
  | { readonly _tag: "New" }
  | { readonly _tag: "Opening"; readonly done: Promise<void> }
  | { readonly _tag: "Open"; readonly id: string | undefined; readonly version: string }

/** A session the serving node opened: its id (none from a service that keeps no sessions) and version. */
export interface Opened {
  readonly id: string | undefined
  readonly version: string
}

export class Opening {
  private state: State

  /**
   * `base` passes `openMcpSession` on to PeerProxy.fetch; `onOpen` is told the version agreed (the transport sends
   * it with every later request). `opened`: a session the serving node opened already, for an earlier request.
   */
  constructor(
    private readonly base: FetchLike,
    private readonly onOpen: (version: string) => void,
    opened?: Opened,
  ) {
    this.state = opened === undefined ? { _tag: "New" } : { _tag: "Open", ...opened }
  }

  readonly fetch: FetchLike = async (url, init) => {
    for (;;) {
      const state = this.state
      if (state._tag === "Opening") {
        await state.done
        continue
      }
      if (state._tag === "Open") {
        // A service that keeps no sessions has none to end.
        if (init?.method === "DELETE" && state.id === undefined) return new Response(null, { status: 200 })
        return this.base(url, { ...init, headers: inSession(init?.headers, state) })
      }
      // Never opened: nothing to end, nothing to listen to; a POST opens it.
      if (init?.method !== "POST") return new Response(null, { status: init?.method === "DELETE" ? 200 : 405 })
      return this.open(url, init)
    }
  }

  private async open(url: string | URL, init: RequestInit): Promise<Response> {
    let finish = () => {}
    this.state = { _tag: "Opening", done: new Promise<void>((resolve) => (finish = resolve)) }
    try {
      const headers = new Headers(init.headers)
      headers.delete("mcp-session-id")
      headers.delete("mcp-protocol-version")
      const asking = { ...init, headers, openMcpSession: LATEST_PROTOCOL_VERSION }
      const response = await this.base(url, asking)
      const agreed = McpOpen.version(response.headers.get(McpOpen.OPENED))
      const version = agreed !== undefined && SUPPORTED_PROTOCOL_VERSIONS.includes(agreed) ? agreed : undefined
      if (version !== undefined) {
        this.state = { _tag: "Open", id: response.headers.get("mcp-session-id") ?? undefined, version }
        this.onOpen(version)
        return response
      }
      this.state = { _tag: "New" }
      if (response.status === 400 || response.status === 404) {
        await response.body?.cancel().catch(() => undefined)
        throw new NotOpened()
      }
      // Any other answer is the request's own (refused, failed, or run by a service that keeps no sessions).
      return response
    } finally {
      if (this.state._tag === "Opening") this.state = { _tag: "New" }
      finish()
    }
  }
}

const inSession = (
  given: ConstructorParameters<typeof Headers>[0],
  state: Extract<State, { _tag: "Open" }>,
): Headers => {
  const headers = new Headers(given)
  if (state.id === undefined) headers.delete("mcp-session-id")
  else headers.set("mcp-session-id", state.id)
  headers.set("mcp-protocol-version", state.version)
  return headers
}

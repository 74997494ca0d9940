/**
 * The tools of peers' MCP services as the gateway's tools read them (`find_remote_tools`, `describe_remote_tool`):
 * a listing is served as held while it is fresh by its `ttlMs` (domain/ListingFreshness), and asked of the peer again
 * once stale. Held per authorization context (the agent the call is made for, or the node itself), never shared
 * between them: the serving node filters a listing by its caller's grants.
 */

import { Context, type Duration, type Effect } from "effect"
import type { Listed } from "../../domain/PeerTools.js"
import type { PeerMcpError } from "../mcp/PeerMcp.js"

export interface Listing {
  readonly tools: ReadonlyArray<Listed>
  /** Asked of the peer for this call (or for one made at the same moment); false when served as held. */
  readonly fetched: boolean
}

export interface ToolListingsService {
  /**
   * The service's tools on the peer, for the current agent (if any): the held listing while fresh, else listed anew
   * within `timeout`; `refresh`: listed anew whatever is held (the caller has reason to think it changed).
   */
  readonly get: (
    peerId: string,
    service: string,
    timeout: Duration.DurationInput,
    options?: { readonly refresh?: boolean },
  ) => Effect.Effect<Listing, PeerMcpError>
}

export class ToolListings extends Context.Tag("mesh/ToolListings")<ToolListings, ToolListingsService>() {}

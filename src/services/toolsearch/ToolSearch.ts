/**
 * Search by intent over the tools of peers' MCP services. The index is kept current by whoever lists tools on peers
 * (`find_remote_tools`, federation): each listing replaces what the index held for that service on that peer, and a
 * service found gone is forgotten. A search ranks by relevance of the intent to tool names, titles, descriptions,
 * input property names and service names (BM25+, lexical: no model, no network).
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Context, type Effect } from "effect"

export interface Hit {
  readonly peerId: string
  readonly service: string
  readonly tool: string
  readonly description: string
  readonly score: number
}

export interface SearchOptions {
  readonly limit: number
  /** Only tools of services this accepts (the ones reachable now, say). */
  readonly keep?: (peerId: string, service: string) => boolean
}

export interface ToolSearchService {
  /** What a peer's service lists now: replaces what the index held for it. */
  readonly replace: (peerId: string, service: string, tools: ReadonlyArray<Tool>) => Effect.Effect<void>
  /** The service on the peer is gone (every service of the peer when `service` is absent). */
  readonly forget: (peerId: string, service?: string) => Effect.Effect<void>
  /** The best matches, best first, with their scores. */
  readonly search: (intent: string, options: SearchOptions) => Effect.Effect<ReadonlyArray<Hit>>
  /** Tools indexed now. */
  readonly size: Effect.Effect<number>
}

export class ToolSearch extends Context.Tag("mesh/ToolSearch")<ToolSearch, ToolSearchService>() {}

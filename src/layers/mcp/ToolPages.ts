/**
 * An MCP server's tools, listed page by page (`tools/list`, following `nextCursor`). The server is not trusted to
 * end its list: the walk stops at MAX_TOOLS kept, at MAX_PAGES pages (a server may send endless empty pages, or pages
 * of tools the caller drops), and at a cursor it has already been given (a loop). What was listed by then is kept, as
 * when the list is longer than MAX_TOOLS. Types only from the SDK, so this loads no more of it than its caller does.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"

/** What lists a page: the SDK's client (2025 era) or a modern request (modern/ModernRequest). */
export interface Lister<T = Tool> {
  readonly listTools: (
    params: { cursor?: string },
    options: { readonly signal: AbortSignal },
  ) => Promise<{ readonly tools: ReadonlyArray<T>; readonly nextCursor?: string | undefined }>
}

/** Tools kept from one server at the most. */
export const MAX_TOOLS = 1024
/** Pages asked for at the most: MAX_TOOLS in pages of 8, and no round trips past that. */
export const MAX_PAGES = 128

/**
 * The tools `keep` maps to something (undefined drops a tool), in the server's order, at most `limit` of them (never
 * more than MAX_TOOLS). Rejects with what the client threw.
 */
export const list = async <A, T = Tool>(
  client: Lister<T>,
  signal: AbortSignal,
  keep: (tool: T) => A | undefined,
  limit: number = MAX_TOOLS,
): Promise<Array<A>> => {
  const most = Math.min(limit, MAX_TOOLS)
  const kept: Array<A> = []
  const seen = new Set<string>()
  let cursor: string | undefined
  for (let pages = 0; pages < MAX_PAGES && kept.length < most; pages++) {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal })
    for (const tool of page.tools) {
      const one = keep(tool)
      if (one !== undefined) kept.push(one)
    }
    cursor = page.nextCursor
    if (cursor === undefined || seen.has(cursor)) break
    seen.add(cursor)
  }
  return kept.slice(0, most)
}

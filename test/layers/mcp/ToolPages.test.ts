/**
 * ToolPages against real MCP SDK servers (in memory) whose `tools/list` pages are written by the test: a server that
 * never ends its list, one that hands back a cursor it gave before, and an honest one that pages to the end.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { ListToolsRequestSchema, type ListToolsResult } from "@modelcontextprotocol/sdk/types.js"
import { afterEach, describe, expect, it } from "vitest"
import * as ToolPages from "../../../src/layers/mcp/ToolPages.js"

const tool = (name: string) => ({ name, inputSchema: { type: "object" as const } })

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** A client of a server answering page `cursor` (undefined for the first) with `pageOf`; `asked` counts the pages. */
const serve = async (pageOf: (cursor: string | undefined) => ListToolsResult) => {
  const asked = { pages: 0 }
  const server = new Server({ name: "pages", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    asked.pages++
    // The pages go round in microtasks, so a walk without a cap would never let the test's timeout fire.
    if (asked.pages > 10 * ToolPages.MAX_PAGES) throw new Error("the walk did not stop")
    return pageOf(request.params?.cursor)
  })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: "test", version: "1.0.0" })
  await Promise.all([server.connect(serverSide), client.connect(clientSide)])
  closers.push(
    () => client.close(),
    () => server.close(),
  )
  return { client, asked }
}

const signal = new AbortController().signal
const name = (t: { name: string }) => t.name

describe("ToolPages.list", () => {
  it("stops a server that never ends its list at MAX_PAGES, keeping what it listed", async () => {
    // A fresh cursor every time, and nothing to show for it past the first page.
    const { client, asked } = await serve((cursor) => ({
      tools: cursor === undefined ? [tool("a")] : [],
      nextCursor: `${Number(cursor ?? 0) + 1}`,
    }))
    await expect(ToolPages.list(client, signal, name)).resolves.toEqual(["a"])
    expect(asked.pages).toBe(ToolPages.MAX_PAGES)
  })

  it("stops at a cursor it was given before", async () => {
    // "x" → "y" → "x" again: the list would go round for ever.
    const { client, asked } = await serve((cursor) => ({
      tools: [tool(cursor ?? "first")],
      nextCursor: cursor === "x" ? "y" : "x",
    }))
    await expect(ToolPages.list(client, signal, name)).resolves.toEqual(["first", "x", "y"])
    expect(asked.pages).toBe(3)
  })

  it("keeps at most MAX_TOOLS, and at most the caller's limit", async () => {
    const { client } = await serve((cursor) => ({
      tools: Array.from({ length: 100 }, (_, i) => tool(`${cursor ?? "0"}-${i}`)),
      nextCursor: `${Number(cursor ?? 0) + 1}`,
    }))
    await expect(ToolPages.list(client, signal, name)).resolves.toHaveLength(ToolPages.MAX_TOOLS)
    await expect(ToolPages.list(client, signal, name, 150)).resolves.toHaveLength(150)
  })

  it("lists an honest server to its end, dropping what the caller drops", async () => {
    const pages: Record<string, ListToolsResult> = {
      start: { tools: [tool("a"), tool("b")], nextCursor: "2" },
      "2": { tools: [tool("skip"), tool("c")], nextCursor: "3" },
      "3": { tools: [tool("d")] },
    }
    const { client, asked } = await serve((cursor) => pages[cursor ?? "start"] as ListToolsResult)
    const kept = await ToolPages.list(client, signal, (t) => (t.name === "skip" ? undefined : t.name))
    expect(kept).toEqual(["a", "b", "c", "d"])
    expect(asked.pages).toBe(3)
  })
})

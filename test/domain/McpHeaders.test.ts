/**
 * The Mcp-* request headers checked against the JSON-RPC body they mirror (issue 50, item 5): agreement passes,
 * every kind of disagreement is named, Base64 sentinel values are decoded before comparing, and a header that is
 * left out is not a disagreement.
 */
import { PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server"
import { describe, expect, it } from "vitest"
import * as McpHeaders from "../../src/domain/McpHeaders.js"

const call = (name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id: 7,
  method: "tools/call",
  params: { name, arguments: args, _meta: { [PROTOCOL_VERSION_META_KEY]: "2026-07-28" } },
})
const b64 = (text: string) => `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`

describe("McpHeaders", () => {
  it("writes out the SDK's key of a request's protocol version", () => {
    expect(McpHeaders.PROTOCOL_VERSION_META_KEY).toBe(PROTOCOL_VERSION_META_KEY)
  })

  it("reads headers that agree with the body, and no headers at all, as agreeing", () => {
    expect(McpHeaders.mismatch({}, call("search"))).toBeUndefined()
    const headers = {
      "mcp-method": "tools/call",
      "mcp-name": "search",
      "mcp-protocol-version": "2026-07-28",
      "mcp-param-region": "us-west1",
    }
    expect(McpHeaders.present(headers)).toBe(true)
    expect(McpHeaders.present({ "mcp-protocol-version": "2025-06-18", "mcp-session-id": "x" })).toBe(false)
    expect(McpHeaders.mismatch(headers, call("search", { region: "us-west1" }))).toBeUndefined()
    expect(McpHeaders.mismatch({ "mcp-name": b64("wetter ☀") }, call("wetter ☀"))).toBeUndefined()
    const read = { jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri: "file:///a b" } }
    expect(
      McpHeaders.mismatch({ "mcp-method": "resources/read", "mcp-name": b64("file:///a b") }, read),
    ).toBeUndefined()
  })

  it("names each disagreement", () => {
    expect(McpHeaders.mismatch({ "mcp-method": "tools/list" }, call("delete_all"))).toMatch(/Mcp-Method/)
    expect(McpHeaders.mismatch({ "mcp-method": "tools/call", "mcp-name": "search" }, call("delete_all"))).toMatch(
      /Mcp-Name/,
    )
    expect(McpHeaders.mismatch({ "mcp-name": b64("search") }, call("delete_all"))).toMatch(/Mcp-Name/)
    expect(McpHeaders.mismatch({ "mcp-name": "=?base64?%%%?=" }, call("search"))).toMatch(/not a valid/)
    expect(McpHeaders.mismatch({ "mcp-name": "search" }, { jsonrpc: "2.0", id: 1, method: "tools/list" })).toMatch(
      /Mcp-Name/,
    )
    expect(McpHeaders.mismatch({ "mcp-method": ["tools/call", "tools/call"] }, call("search"))).toMatch(
      /more than once/,
    )
    expect(McpHeaders.mismatch({ "mcp-param-region": " padded" }, call("search"))).toMatch(/Mcp-Param|mcp-param/i)
    expect(
      McpHeaders.mismatch({ "mcp-method": "tools/call", "mcp-protocol-version": "2025-11-25" }, call("search")),
    ).toMatch(/MCP-Protocol-Version/)
    expect(McpHeaders.mismatch({ "mcp-method": "tools/call" }, [call("search")])).toMatch(/batch/)
  })

  it("answers a mismatch with -32020, echoing the request's id", () => {
    expect(McpHeaders.mismatchAnswer(call("x"), "why")).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32020, message: "Header mismatch: why" },
    })
    expect(McpHeaders.mismatchAnswer("junk", "why").id).toBeNull()
  })
})

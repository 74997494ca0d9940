import { describe, expect, it } from "vitest"
import * as McpEra from "../../src/domain/McpEra.js"

describe("McpEra", () => {
  it("only a 400 without a modern JSON-RPC error shows a legacy server", () => {
    const error = (code: number) => JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code, message: "x" } })
    // The 2025-era SDK's refusals of a request without a session.
    expect(McpEra.answerShowsLegacy(400, error(-32000))).toBe(true)
    expect(McpEra.answerShowsLegacy(400, "Bad Request")).toBe(true)
    expect(McpEra.answerShowsLegacy(400, "")).toBe(true)
    // Modern servers' own 400s: header mismatch, missing capability, unsupported version.
    for (const code of [-32020, -32021, -32022]) expect(McpEra.answerShowsLegacy(400, error(code))).toBe(false)
    // Other statuses are the request's own outcome.
    expect(McpEra.answerShowsLegacy(404, error(-32000))).toBe(false)
    expect(McpEra.answerShowsLegacy(200, "{}")).toBe(false)
  })

  it("modern versions are 2026-07-28 and later dates", () => {
    expect(McpEra.isModernVersion("2026-07-28")).toBe(true)
    expect(McpEra.isModernVersion("2027-01-01")).toBe(true)
    expect(McpEra.isModernVersion("2025-11-25")).toBe(false)
    expect(McpEra.isModernVersion("2026-07-28; drop")).toBe(false)
    expect(McpEra.isModernVersion(undefined)).toBe(false)
  })

  it("a modern request mirrors its method and name in headers, base64 where a name is not plain ASCII", () => {
    expect(McpEra.requestHeaders("tools/call", "echo")).toMatchObject({
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "echo",
    })
    expect(McpEra.requestHeaders("tools/call", "héllo")["mcp-name"]).toBe(
      `=?base64?${Buffer.from("héllo").toString("base64")}?=`,
    )
    expect(McpEra.requestHeaders("tools/call", " lead")["mcp-name"]).toMatch(/^=\?base64\?/)
    expect(McpEra.requestHeaders("tools/list")).not.toHaveProperty("mcp-name")
  })
})

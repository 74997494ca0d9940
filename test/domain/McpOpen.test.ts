/** Reading the answer to the initialize a serving node sends for its caller (domain/McpOpen). */
import { describe, expect, it } from "vitest"
import * as McpOpen from "../../src/domain/McpOpen.js"

const answer = (result: unknown, id: unknown = 0) => JSON.stringify({ jsonrpc: "2.0", id, result })

describe("McpOpen.agreedVersion", () => {
  it("reads the version from a JSON answer or from the event that answers the initialize", () => {
    expect(McpOpen.agreedVersion("application/json", answer({ protocolVersion: "2025-06-18" }))).toBe("2025-06-18")
    const events = `event: message\nid: 1\ndata: ${answer({ protocolVersion: "2025-11-25" })}\n\n`
    expect(McpOpen.agreedVersion("text/event-stream", events)).toBe("2025-11-25")
  })

  it("takes no error, no answer to another request, and no version that is not one", () => {
    const error = JSON.stringify({ jsonrpc: "2.0", id: 0, error: { code: -32600, message: "no" } })
    expect(McpOpen.agreedVersion("application/json", error)).toBeUndefined()
    expect(McpOpen.agreedVersion("application/json", answer({ protocolVersion: "2025-06-18" }, 7))).toBeUndefined()
    expect(McpOpen.agreedVersion("application/json", answer({ protocolVersion: "latest" }))).toBeUndefined()
    expect(McpOpen.agreedVersion("text/event-stream", "data: {not json\n\n")).toBeUndefined()
  })

  it("takes from a peer's header only what is shaped as a version", () => {
    expect(McpOpen.version("2025-06-18")).toBe("2025-06-18")
    expect(McpOpen.version(["2025-06-18"])).toBeUndefined()
    expect(McpOpen.version("latest")).toBeUndefined()
    expect(McpOpen.version("2025-06-18\r\nx-forged: 1")).toBeUndefined()
  })
})

import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as ToolName from "../../src/domain/ToolName.js"

describe("tool names on the mesh", () => {
  it("a namespaced name is mcp://<service>/<tool>; the tool part may hold slashes", () => {
    expect(ToolName.parse("mcp://docs/search")).toEqual(Either.right({ service: "docs", tool: "search" }))
    expect(ToolName.parse(" mcp://docs/a/b ")).toEqual(Either.right({ service: "docs", tool: "a/b" }))
    expect(ToolName.format({ service: "docs", tool: "search" })).toBe("mcp://docs/search")
    for (const bad of ["search", "mcp://docs", "mcp://docs/", "a2a://docs/x", "mcp://../x", "mcp://docs/a\u0000b"]) {
      expect(Either.isLeft(ToolName.parse(bad)), bad).toBe(true)
    }
  })

  it("a service argument is bare or mcp://; other schemes are refused", () => {
    expect(ToolName.parseService("docs")).toEqual(Either.right("docs"))
    expect(ToolName.parseService("mcp://docs")).toEqual(Either.right("docs"))
    expect(ToolName.parseService("mcp://docs/")).toEqual(Either.right("docs"))
    for (const bad of ["a2a://docs", "inference://llm", "mcp://docs/x", "two words", ""]) {
      expect(Either.isLeft(ToolName.parseService(bad)), bad).toBe(true)
    }
  })

  it("a search's tool argument is a bare tool name or a namespaced one, which names the service too", () => {
    expect(ToolName.parseQuery("search")).toEqual(Either.right({ tool: "search" }))
    expect(ToolName.parseQuery("mcp://docs/search")).toEqual(Either.right({ service: "docs", tool: "search" }))
    expect(Either.isLeft(ToolName.parseQuery("a2a://docs/search"))).toBe(true)
    expect(Either.isLeft(ToolName.parseQuery("x".repeat(300)))).toBe(true)
  })
})

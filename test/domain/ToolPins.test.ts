import { Either } from "effect"
import { describe, expect, it } from "vitest"
import * as ToolPins from "../../src/domain/ToolPins.js"

const A = `sha256:${"a".repeat(64)}`
const B = `sha256:${"b".repeat(64)}`
const pin = (tool: string, fingerprint: string, peerLabels: Record<string, string> = {}) => ({
  tool,
  fingerprint,
  peerLabels,
})

describe("tool pins", () => {
  it("approve the pinned definitions of a tool, for the providers whose labels match", () => {
    const pins = [pin("mcp://demo/word_count", A), pin("mcp://demo/word_count", B, { zone: "eu" })]
    expect(ToolPins.check(pins, "mcp://demo/word_count", A, {})).toEqual({ _tag: "Approved" })
    expect(ToolPins.check(pins, "mcp://demo/word_count", B, { zone: "eu", team: "x" })).toEqual({ _tag: "Approved" })
    // B is approved only for providers in eu.
    expect(ToolPins.check(pins, "mcp://demo/word_count", B, { zone: "us" })).toEqual({ _tag: "Changed", approved: [A] })
    expect(ToolPins.check(pins, "mcp://demo/shout", B, {})).toEqual({ _tag: "Unpinned" })
  })

  it("a pin limited to labels leaves other providers unpinned", () => {
    const pins = [pin("mcp://demo/word_count", A, { zone: "eu" })]
    expect(ToolPins.check(pins, "mcp://demo/word_count", B, {})).toEqual({ _tag: "Unpinned" })
    expect(ToolPins.check(pins, "mcp://demo/word_count", B, { zone: "eu" })._tag).toBe("Changed")
  })

  it("are validated: tool name, fingerprint, labels, duplicates", () => {
    expect(Either.isRight(ToolPins.validate([pin("mcp://demo/word_count", A)]))).toBe(true)
    const reason = (pins: ReadonlyArray<ToolPins.ToolPin>) => Either.getLeft(ToolPins.validate(pins))
    expect(reason([pin("mcp://demo", A)])).toEqual(
      expect.objectContaining({ value: expect.stringContaining("tool_pins[0].tool") }),
    )
    expect(reason([pin("mcp://demo/x", "sha256:xyz")])).toEqual(
      expect.objectContaining({ value: expect.stringContaining("tool_pins[0].fingerprint") }),
    )
    expect(reason([pin("mcp://demo/x", A), pin("mcp://demo/x", A)])).toEqual(
      expect.objectContaining({ value: expect.stringContaining("tool_pins[1]: the same pin") }),
    )
    expect(reason([pin("mcp://demo/x", A, { "": "v" })])).toEqual(
      expect.objectContaining({ value: expect.stringContaining("tool_pins[0].peer_labels") }),
    )
  })
})

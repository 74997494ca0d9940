/** The node's kept tool definitions: a bounded number per tool (the newest), a bounded total, none twice. */
import { describe, expect, it } from "@effect/vitest"
import * as PinnedDefinitions from "../../src/layers/tooldrift/PinnedDefinitions.js"

describe("pinned definitions", () => {
  it("keeps the newest few per tool and nothing past the total cap", () => {
    let held: PinnedDefinitions.Definitions = new Map()
    for (let i = 0; i < PinnedDefinitions.MAX_PER_TOOL + 2; i++) {
      held = PinnedDefinitions.add(held, "mcp://demo/t", `sha256:${i}`, `{"v":${i}}`) ?? held
    }
    expect([...(held.get("mcp://demo/t")?.keys() ?? [])]).toEqual(
      Array.from({ length: PinnedDefinitions.MAX_PER_TOOL }, (_, i) => `sha256:${i + 2}`),
    )
    // Known already, empty (over the report cap), or past the total: not kept.
    expect(PinnedDefinitions.add(held, "mcp://demo/t", "sha256:3", "{}")).toBeUndefined()
    expect(PinnedDefinitions.add(held, "mcp://demo/u", "sha256:a", "")).toBeUndefined()
    const big = "x".repeat(PinnedDefinitions.MAX_BYTES - PinnedDefinitions.sizeOf(held))
    const full = PinnedDefinitions.add(held, "mcp://demo/u", "sha256:b", big)
    expect(full).toBeDefined()
    expect(PinnedDefinitions.add(full ?? held, "mcp://demo/v", "sha256:c", "{}")).toBeUndefined()
  })
})

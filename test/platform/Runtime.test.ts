import { describe, expect, it } from "@effect/vitest"
import { unsupportedRuntime } from "../../src/platform/runtime.js"

describe("the runtime check of the entry points", () => {
  it("refuses Node 20 and Node 22 before 22.14, whose Node-API is too old for better-sqlite3", () => {
    expect(unsupportedRuntime({ node: "20.20.2", napi: "9" })).toBe(
      "needs Node.js 22 (22.14 or later) or 24; this is Node 20.20.2",
    )
    expect(unsupportedRuntime({ node: "22.13.1", napi: "9" })).toBe(
      "needs Node.js 22 (22.14 or later) or 24; this is Node 22.13.1",
    )
    expect(unsupportedRuntime({ node: "18.0.0" })).toBeDefined()
  })

  it("accepts Node 22.14 and later, Node 24, and the runtime running this test", () => {
    expect(unsupportedRuntime({ node: "22.14.0", napi: "10" })).toBeUndefined()
    expect(unsupportedRuntime({ node: "24.21.0", napi: "10" })).toBeUndefined()
    expect(unsupportedRuntime(process.versions)).toBeUndefined()
  })
})

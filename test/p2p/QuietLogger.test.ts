import { describe, expect, it } from "@effect/vitest"
import * as QuietLogger from "../../src/p2p/QuietLogger.js"

describe("libp2p's logger", () => {
  it("is silent unless DEBUG is set, and libp2p's own (debug's) when it is, for an operator tracing libp2p", () => {
    const quiet = QuietLogger.option({}).logger
    expect(quiet).toBeDefined()
    const log = quiet?.forComponent("libp2p:yamux")
    expect(log?.enabled).toBe(false)
    expect(log?.newScope("stream").enabled).toBe(false)
    expect(() => log?.error("%s", "anything")).not.toThrow()
    expect(QuietLogger.option({ DEBUG: " " }).logger).toBeDefined()
    // No logger given: createLibp2p makes its default one, which `debug` turns on by DEBUG.
    expect(QuietLogger.option({ DEBUG: "libp2p:*" })).toEqual({})
  })
})

import { expect, it, describe as suite } from "vitest"
import { describe } from "../../src/platform/Describe.js"

suite("describe", () => {
  it("gives an error's message as one line, so what a peer said cannot start a log line of its own", () => {
    expect(describe(new Error("refused\nlevel=error msg=forged  \t entry"))).toBe(
      "refused level=error msg=forged entry",
    )
  })

  it("cuts a long message, and takes a value that is not an Error as text", () => {
    expect(describe(new Error("x".repeat(1000)))).toHaveLength(200)
    expect(describe("y".repeat(50), 10)).toBe("y".repeat(10))
  })

  it("never gives an empty line", () => {
    expect(describe(new Error(" \n "))).toBe("failed")
  })
})

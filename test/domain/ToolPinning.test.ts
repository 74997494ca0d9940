import { describe, expect, it } from "vitest"
import * as ToolPinning from "../../src/domain/ToolPinning.js"

const A = `sha256:${"a".repeat(64)}`
const B = `sha256:${"b".repeat(64)}`
const TOOL = "mcp://demo/word_count"
const policyPin = { tool: TOOL, fingerprint: A, peerLabels: {} }

const judge = (overrides: Partial<Parameters<typeof ToolPinning.judge>[0]>) =>
  ToolPinning.judge({
    mode: "enforce",
    policyPins: [],
    firstUse: undefined,
    tool: TOOL,
    fingerprint: A,
    labels: {},
    ...overrides,
  })

describe("tool pinning", () => {
  it("a definition the policy pins is pinned; another is changed, hidden under enforce, shown under warn", () => {
    expect(judge({ policyPins: [policyPin] })).toMatchObject({ pin: "pinned", usable: true })
    expect(judge({ policyPins: [policyPin], fingerprint: B })).toMatchObject({
      pin: "changed",
      against: "policy",
      expected: [A],
      usable: false,
    })
    expect(judge({ policyPins: [policyPin], fingerprint: B, mode: "warn" })).toMatchObject({
      pin: "changed",
      usable: true,
    })
  })

  it("the policy's pin wins over the node's first-use pin", () => {
    // The node pinned B first; the operator approved A: A is pinned, B is changed.
    expect(judge({ policyPins: [policyPin], firstUse: B })).toMatchObject({ pin: "pinned" })
    expect(judge({ policyPins: [policyPin], firstUse: B, fingerprint: B })).toMatchObject({ pin: "changed" })
  })

  it("without a policy pin, the first definition seen is kept and any other is changed", () => {
    expect(judge({})).toMatchObject({ pin: "unpinned", usable: true })
    expect(judge({ firstUse: A })).toMatchObject({ pin: "unpinned", usable: true })
    expect(judge({ firstUse: A, fingerprint: B })).toMatchObject({
      pin: "changed",
      against: "first_use",
      expected: [A],
      usable: false,
    })
  })

  it("off checks nothing", () => {
    expect(judge({ mode: "off", policyPins: [policyPin], fingerprint: B })).toMatchObject({
      pin: "unpinned",
      usable: true,
    })
  })

  it("a refused call says what changed and how to approve it", () => {
    const text = ToolPinning.refusal(TOOL, judge({ policyPins: [policyPin], fingerprint: B }))
    expect(text).toContain(B)
    expect(text).toContain(`expected ${A}`)
    expect(text).toContain("mesh policy")
  })
})

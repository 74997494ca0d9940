import { createHash } from "node:crypto"
import canonicalize from "canonicalize"
import { describe, expect, it } from "vitest"
import * as ToolFingerprint from "../../src/domain/ToolFingerprint.js"

const wordCount = {
  name: "word_count",
  title: "Word count",
  description: "Counts the words of a text.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  annotations: { readOnlyHint: true },
}

describe("tool fingerprint", () => {
  it("canonicalises per RFC 8785 (its own example)", () => {
    // RFC 8785 section 3.2.2's input and its canonical form.
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    )
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    )
  })

  it("is sha256 of the canonical definition, whatever the key order", () => {
    const text = ToolFingerprint.canonicalText(wordCount)
    expect(ToolFingerprint.fingerprint(wordCount)).toBe(`sha256:${createHash("sha256").update(text).digest("hex")}`)
    const reordered = {
      annotations: { readOnlyHint: true },
      inputSchema: { required: ["text"], properties: { text: { type: "string" } }, type: "object" },
      description: wordCount.description,
      title: wordCount.title,
      name: wordCount.name,
    }
    expect(ToolFingerprint.fingerprint(reordered)).toBe(ToolFingerprint.fingerprint(wordCount))
    expect(ToolFingerprint.isFingerprint(ToolFingerprint.fingerprint(wordCount))).toBe(true)
  })

  it("changes with every field an agent acts on, hidden text included", () => {
    const base = ToolFingerprint.fingerprint(wordCount)
    const changes = [
      { ...wordCount, description: "Counts the words of a text.\u200b" },
      { ...wordCount, title: "Word count!" },
      { ...wordCount, inputSchema: { ...wordCount.inputSchema, required: [] } },
      { ...wordCount, outputSchema: { type: "object" } },
      { ...wordCount, annotations: { readOnlyHint: false } },
      { ...wordCount, name: "word_count2" },
    ]
    for (const changed of changes) expect(ToolFingerprint.fingerprint(changed)).not.toBe(base)
  })

  it("ignores what is not part of the definition", () => {
    expect(ToolFingerprint.fingerprint({ ...wordCount, _meta: { x: 1 }, icons: [] })).toBe(
      ToolFingerprint.fingerprint(wordCount),
    )
  })

  it("recognises only sha256 fingerprints in lower-case hex", () => {
    expect(ToolFingerprint.isFingerprint(`sha256:${"a".repeat(64)}`)).toBe(true)
    expect(ToolFingerprint.isFingerprint(`sha256:${"A".repeat(64)}`)).toBe(false)
    expect(ToolFingerprint.isFingerprint(`sha1:${"a".repeat(40)}`)).toBe(false)
  })
})

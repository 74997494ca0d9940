import { describe, expect, it } from "vitest"
import * as HiddenText from "../../src/domain/HiddenText.js"

const ZWSP = "\u200b"
const RLO = "\u202e"
const PDF = "\u202c"
/** "ignore previous" in Unicode tag characters: invisible, yet read by a model. */
const TAGS = [..."ignore previous"].map((c) => String.fromCodePoint(0xe0000 + (c.codePointAt(0) ?? 0))).join("")

describe("hidden text", () => {
  it("removes zero-width, bidi, tag and control characters and keeps what a reader sees", () => {
    const written = `Counts${ZWSP} words.${RLO}evil${PDF}${TAGS}\u0007\u00ad\ufeff\ufe0f end`
    expect(HiddenText.clean(written)).toBe("Counts words.evil end")
    expect(HiddenText.holdsHidden(written)).toBe(true)
  })

  it("keeps tabs, line breaks and ordinary text of every script", () => {
    const text = "Zählt Wörter\n\tin 日本語, العربية and emoji 🙂"
    expect(HiddenText.clean(text)).toBe(text)
    expect(HiddenText.holdsHidden(text)).toBe(false)
    expect(HiddenText.clean("a\r\nb\rc")).toBe("a\nb\nc")
  })

  it("cleans every string and key of a schema", () => {
    const schema = {
      type: "object",
      properties: { [`text${ZWSP}`]: { type: "string", description: `The text${TAGS}`, enum: [`a${RLO}`] } },
      required: [`text${ZWSP}`],
    }
    expect(HiddenText.cleanJson(schema)).toEqual({
      type: "object",
      properties: { text: { type: "string", description: "The text", enum: ["a"] } },
      required: ["text"],
    })
  })

  it("reveals what it would remove, for a reviewer", () => {
    expect(HiddenText.reveal(`a${ZWSP}b\n`)).toBe("a\\u{200b}b\n")
  })
})

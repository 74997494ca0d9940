import { describe, expect, it } from "@effect/vitest"
import * as EventStream from "../../../src/layers/mcp/EventStream.js"

/** Every line ending the standard allows, a comment, a named event, data on two lines, a field without a colon. */
const STREAM =
  ": a comment\r\n" +
  "id: 1\r\n" +
  'data: {"a":1}\r\n' +
  "\r\n" +
  "event: ping\n" +
  "data:no space\n" +
  "\n" +
  "data: first\r" +
  "data:  second, with its own space\r" +
  "\r" +
  "data\n" +
  "\n" +
  "retry: 1000\n" +
  "\n" +
  "data: unfinished"

const EXPECTED: ReadonlyArray<EventStream.Event> = [
  { type: "message", data: '{"a":1}' },
  { type: "ping", data: "no space" },
  { type: "message", data: "first\n second, with its own space" },
  { type: "message", data: "" },
]

const parse = (chunks: ReadonlyArray<string>) => {
  const parser = new EventStream.Parser()
  return chunks.flatMap((chunk) => [...parser.push(chunk)])
}

describe("EventStream", () => {
  it("reads events as the standard does, whatever the line endings", () => {
    expect(parse([STREAM])).toEqual(EXPECTED)
  })

  it("gives the same events however the text is cut, a CRLF cut in two included", () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      expect(parse([STREAM.slice(0, cut), STREAM.slice(cut)])).toEqual(EXPECTED)
    }
    expect(parse([...STREAM])).toEqual(EXPECTED)
  })

  it("an event is not given before its blank line", () => {
    const parser = new EventStream.Parser()
    expect(parser.push("data: one\n")).toEqual([])
    expect(parser.push("\n")).toEqual([{ type: "message", data: "one" }])
  })
})

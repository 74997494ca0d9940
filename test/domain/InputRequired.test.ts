import { Either } from "effect"
import { describe, expect, it } from "vitest"
import * as InputRequired from "../../src/domain/InputRequired.js"

const elicit = { method: "elicitation/create", params: { message: "Sure?" } }

describe("InputRequired", () => {
  it("keeps a well-formed result, its unknown fields dropped", () => {
    const checked = InputRequired.check({
      resultType: "input_required",
      inputRequests: { confirm: elicit },
      requestState: "s",
      extra: "dropped",
    })
    expect(Either.getOrThrow(checked)).toEqual({
      resultType: "input_required",
      inputRequests: { confirm: elicit },
      requestState: "s",
    })
  })

  it("refuses too many requests, unknown methods, a huge state, or nothing asked", () => {
    const many = Object.fromEntries(Array.from({ length: InputRequired.MAX_REQUESTS + 1 }, (_, i) => [`k${i}`, elicit]))
    const refused = [
      { resultType: "input_required", inputRequests: many },
      { resultType: "input_required", inputRequests: { x: { method: "tools/call" } } },
      { resultType: "input_required", requestState: "x".repeat(InputRequired.MAX_STATE_CHARS + 1) },
      { resultType: "input_required" },
      { resultType: "input_required", inputRequests: { "": elicit } },
      { resultType: "complete" },
    ]
    for (const value of refused)
      expect(Either.isLeft(InputRequired.check(value)), JSON.stringify(value).slice(0, 80)).toBe(true)
  })

  it("the node's request_state carries the round and the server's state, and nothing else reads as one", () => {
    const wrapped = InputRequired.wrapState(3, "server-state")
    expect(InputRequired.unwrapState(wrapped)).toEqual({ round: 3, state: "server-state" })
    expect(InputRequired.unwrapState(InputRequired.wrapState(1, undefined))).toEqual({ round: 1, state: undefined })
    expect(InputRequired.unwrapState("forged")).toBeUndefined()
    expect(InputRequired.unwrapState(Buffer.from(JSON.stringify({ n: 0 })).toString("base64url"))).toBeUndefined()
  })

  it("a retry's answers are bounded", () => {
    expect(InputRequired.checkRetry({ inputResponses: { a: { action: "accept" } } })).toBeUndefined()
    const big = { a: "x".repeat(InputRequired.MAX_ANSWER_BYTES) }
    expect(InputRequired.checkRetry({ inputResponses: big })).toContain("bytes")
  })
})

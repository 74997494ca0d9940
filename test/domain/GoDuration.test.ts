import { describe, expect, it } from "@effect/vitest"
import { Duration, Either } from "effect"
import * as GoDuration from "../../src/domain/GoDuration.js"

const millis = (text: string) => Either.map(GoDuration.parse(text), Duration.toMillis)

describe("GoDuration", () => {
  it("parses the flag defaults of the spec", () => {
    expect(millis("24h")).toEqual(Either.right(86_400_000))
    expect(millis("2160h")).toEqual(Either.right(7_776_000_000))
    expect(millis("15m")).toEqual(Either.right(900_000))
    expect(millis("30s")).toEqual(Either.right(30_000))
    expect(millis("0")).toEqual(Either.right(0))
  })

  it("parses compound and fractional durations", () => {
    expect(millis("1h30m")).toEqual(Either.right(5_400_000))
    expect(millis("1.5h")).toEqual(Either.right(5_400_000))
    expect(millis("300ms")).toEqual(Either.right(300))
    expect(millis("2m3s500ms")).toEqual(Either.right(123_500))
  })

  it("refuses what Go refuses, with a reason", () => {
    for (const bad of ["banana", "", "10", "5d", "1h-2m", "h", "-5m"]) {
      expect(Either.isLeft(GoDuration.parse(bad)), bad).toBe(true)
    }
    expect(GoDuration.parse("banana")).toEqual(
      Either.left('invalid duration "banana" (use Go syntax such as 30s, 15m, 1h30m, 0)'),
    )
  })

  it("formats as Go prints", () => {
    expect(GoDuration.format(Duration.hours(24))).toBe("24h0m0s")
    expect(GoDuration.format(Duration.minutes(15))).toBe("15m0s")
    expect(GoDuration.format(Duration.zero)).toBe("0s")
    expect(GoDuration.format(Duration.millis(300))).toBe("300ms")
  })
})

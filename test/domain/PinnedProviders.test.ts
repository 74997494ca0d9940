/** Which providers of one tool may be chosen: shadowing refused under every mode, a rug pull left to the mode. */
import { describe, expect, it } from "@effect/vitest"
import * as PinnedProviders from "../../src/domain/PinnedProviders.js"
import type { Judgement } from "../../src/domain/ToolPinning.js"

const judgement = (pin: Judgement["pin"], usable = pin !== "changed"): Judgement => ({
  pin,
  fingerprint: `sha256:${pin}`,
  expected: [],
  usable,
})

const chosen = (offers: ReadonlyArray<readonly [string, Judgement]>) =>
  PinnedProviders.choose(offers, ([, j]) => j).map(([peer]) => peer)

describe("the providers a tool may be chosen from", () => {
  it("a provider whose definition changed is never chosen beside one that matches, whatever the mode", () => {
    expect(
      chosen([
        ["b", judgement("unpinned")],
        ["c", judgement("changed", true)],
      ]),
    ).toEqual(["b"])
    expect(
      chosen([
        ["b", judgement("pinned")],
        ["c", judgement("changed", false)],
      ]),
    ).toEqual(["b"])
    expect(
      chosen([
        ["b", judgement("pinned")],
        ["c", judgement("unpinned")],
      ]),
    ).toEqual(["b", "c"])
  })

  it("when every definition changed, the mode decides: warn chooses them, enforce none", () => {
    expect(
      chosen([
        ["b", judgement("changed", true)],
        ["c", judgement("changed", true)],
      ]),
    ).toEqual(["b", "c"])
    expect(chosen([["b", judgement("changed", false)]])).toEqual([])
    expect(chosen([])).toEqual([])
  })
})

/** The freshness rule of peers' tool listings: the peer's ttlMs bounded, the poll's backoff and jitter. */
import { describe, expect, it } from "vitest"
import * as ListingFreshness from "../../src/domain/ListingFreshness.js"

const { FLOOR_MS, CEILING_MS, DEFAULT_POLL_MS, JITTER } = ListingFreshness

describe("listing freshness", () => {
  it("bounds a peer's ttlMs: 0 and negative to the floor, huge to the ceiling; not a number is none", () => {
    expect(ListingFreshness.ttlOf(5_000)).toBe(5_000)
    expect(ListingFreshness.ttlOf(0)).toBe(FLOOR_MS)
    expect(ListingFreshness.ttlOf(-1)).toBe(FLOOR_MS)
    expect(ListingFreshness.ttlOf(Number.NEGATIVE_INFINITY)).toBe(FLOOR_MS)
    expect(ListingFreshness.ttlOf(Number.MAX_SAFE_INTEGER)).toBe(CEILING_MS)
    expect(ListingFreshness.ttlOf(Number.POSITIVE_INFINITY)).toBe(CEILING_MS)
    expect(ListingFreshness.ttlOf(1_500.7)).toBe(1_500)
    for (const odd of [undefined, null, Number.NaN, "60000", {}]) expect(ListingFreshness.ttlOf(odd)).toBeUndefined()
  })

  it("a listing of pages is as fresh as its least fresh page", () => {
    expect(ListingFreshness.least(undefined, 5_000)).toBe(5_000)
    expect(ListingFreshness.least(5_000, 2_000)).toBe(2_000)
    expect(ListingFreshness.least(5_000, "x")).toBe(5_000)
    expect(ListingFreshness.least(undefined, undefined)).toBeUndefined()
  })

  it("on demand, a listing without a ttl is held for the floor only", () => {
    expect(ListingFreshness.freshFor(undefined)).toBe(FLOOR_MS)
    expect(ListingFreshness.freshFor(30_000)).toBe(30_000)
  })

  it("the poll doubles while nothing changes, up to a minute or the ttl when longer", () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => ListingFreshness.pollEvery(FLOOR_MS, n))).toEqual([
      1_000,
      2_000,
      4_000,
      8_000,
      16_000,
      32_000,
      DEFAULT_POLL_MS,
    ])
    expect(ListingFreshness.pollEvery(300_000, 0)).toBe(300_000)
    expect(ListingFreshness.pollEvery(300_000, 9)).toBe(300_000)
    expect(ListingFreshness.pollEvery(undefined, 0)).toBe(DEFAULT_POLL_MS)
    expect(ListingFreshness.pollEvery(FLOOR_MS, 10_000)).toBe(DEFAULT_POLL_MS)
  })

  it("the poll is due after its interval and at most a tenth more, the same for the same provider and time", () => {
    const dues = Array.from({ length: 200 }, (_, i) => ListingFreshness.pollDueAt(`peer${i}/demo`, 1_000, 20_000, 0))
    for (const due of dues) {
      expect(due).toBeGreaterThanOrEqual(21_000)
      expect(due).toBeLessThan(21_000 + 20_000 * JITTER)
    }
    // Spread, not all at once.
    expect(new Set(dues).size).toBeGreaterThan(150)
    expect(ListingFreshness.pollDueAt("peer1/demo", 1_000, 20_000, 0)).toBe(dues[1])
  })
})

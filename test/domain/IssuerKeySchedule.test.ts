import { describe, expect, it } from "vitest"
import * as S from "../../src/domain/IssuerKeySchedule.js"

const MINUTE = 60_000

describe("issuer key schedule", () => {
  it("reads max-age from Cache-Control, less Age, and nothing else", () => {
    expect(S.providerMaxAgeSeconds("public, max-age=300, must-revalidate", undefined)).toBe(300)
    expect(S.providerMaxAgeSeconds("MAX-AGE=60", undefined)).toBe(60)
    expect(S.providerMaxAgeSeconds('max-age="60"', undefined)).toBe(60)
    expect(S.providerMaxAgeSeconds("max-age=300", "100")).toBe(200)
    expect(S.providerMaxAgeSeconds("max-age=300", "400")).toBe(0)
    // Not max-age: s-maxage is for shared caches, and no-store or no-cache say nothing about how long keys are good.
    expect(S.providerMaxAgeSeconds("s-maxage=60", undefined)).toBeUndefined()
    expect(S.providerMaxAgeSeconds("no-store", undefined)).toBeUndefined()
    expect(S.providerMaxAgeSeconds("no-cache, private", undefined)).toBeUndefined()
    expect(S.providerMaxAgeSeconds("max-age=soon", undefined)).toBeUndefined()
    expect(S.providerMaxAgeSeconds(undefined, "5")).toBeUndefined()
  })

  it("the provider's max age shortens the configured one, never lengthens it, and not below the floor", () => {
    expect(S.lifetimeMs(10 * MINUTE, undefined)).toBe(10 * MINUTE)
    expect(S.lifetimeMs(10 * MINUTE, 120)).toBe(2 * MINUTE)
    expect(S.lifetimeMs(10 * MINUTE, 86_400)).toBe(10 * MINUTE)
    expect(S.lifetimeMs(10 * MINUTE, 0)).toBe(S.MIN_PROVIDER_MAX_AGE_MS)
    // An operator's shorter age stands below the floor: the floor only limits the provider.
    expect(S.lifetimeMs(2_000, 0)).toBe(2_000)
  })

  it("keys are fresh within their lifetime, stale after it or after a failed read, expired past the limit", () => {
    const held = { readAtMs: 0, lifetimeMs: 10 * MINUTE }
    expect(S.freshness(held, false, 10 * MINUTE)).toBe("fresh")
    expect(S.freshness(held, true, MINUTE)).toBe("stale")
    expect(S.freshness(held, false, 10 * MINUTE + 1)).toBe("stale")
    expect(S.freshness(held, true, 10 * MINUTE + S.STALE_LIMIT_MS)).toBe("stale")
    expect(S.freshness(held, true, 10 * MINUTE + S.STALE_LIMIT_MS + 1)).toBe("expired")
  })

  it("the next read is due before the lifetime ends; failed reads are retried, backing off to 30 s or the lifetime", () => {
    const held = { readAtMs: 1_000, lifetimeMs: 10 * MINUTE }
    expect(S.nextReadAt(held, 0, undefined)).toBe(1_000 + 5 * MINUTE)
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((failures) => S.nextReadAt(held, failures, 100_000) - 100_000)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ])
    const short = { readAtMs: 0, lifetimeMs: 2_000 }
    expect([1, 2, 3].map((failures) => S.nextReadAt(short, failures, 0))).toEqual([1_000, 2_000, 2_000])
  })

  it("reads come from a bucket: a burst, then one per interval", () => {
    let bucket = S.fullBucket(0)
    const waits: Array<number> = []
    for (let i = 0; i < S.READ_BURST + 1; i++) {
      const taken = S.takeRead(bucket, 0)
      bucket = taken.bucket
      waits.push(taken.waitMs)
    }
    expect(waits).toEqual([...Array(S.READ_BURST).fill(0), S.READ_INTERVAL_MS])
    expect(S.takeRead(bucket, S.READ_INTERVAL_MS / 2).waitMs).toBe(S.READ_INTERVAL_MS / 2)
    const refilled = S.takeRead(bucket, S.READ_INTERVAL_MS)
    expect(refilled.waitMs).toBe(0)
    expect(S.takeRead(refilled.bucket, S.READ_INTERVAL_MS).waitMs).toBe(S.READ_INTERVAL_MS)
    // Never more than the burst, however long it was left alone.
    expect(S.takeRead(S.fullBucket(0), 3_600_000).bucket.tokens).toBe(S.READ_BURST - 1)
  })
})

import { describe, expect, it } from "@effect/vitest"
import * as CredentialSchedule from "../../src/domain/CredentialSchedule.js"

const now = Date.parse("2026-06-01T12:00:00Z")
const HOUR = 3_600_000
const key = (id: number, retiresAt?: number) => ({ id, publicKey: new Uint8Array(32), retiresAt })
/** A 24-hour credential issued an hour ago by key 1. */
const held = { issuedAt: now - HOUR, expiresAt: now + 23 * HOUR, keyId: 1 }

describe("CredentialSchedule", () => {
  it("refreshes when a third of the lifetime is left while its key stays current", () => {
    expect(CredentialSchedule.nextRefresh(held, [key(1)], undefined, now)).toEqual({
      _tag: "Lifetime",
      at: now + 15 * HOUR,
    })
  })

  it("refreshes before its key retires, a margin ahead, when the key set says when", () => {
    const due = CredentialSchedule.nextRefresh(held, [key(1, now + 2 * HOUR)], undefined, now)
    expect(due).toEqual({ _tag: "KeyRetiring", at: now + 2 * HOUR - 5 * 60_000, retiresAt: now + 2 * HOUR })
  })

  it("plans one move per new key, inside the first quarter of the time before the old key retires", () => {
    const keys = [key(1, now + HOUR), key(2)]
    const early = CredentialSchedule.planMove(held, keys, undefined, now, 0)
    const late = CredentialSchedule.planMove(held, keys, undefined, now, 0.999)
    expect(early).toEqual({ newestKeyId: 2, at: now })
    expect(late?.at).toBe(now + Math.floor(HOUR * 0.25 * 0.999))
    // Seen again at the next sync: the move already planned stands, so the spread is not redrawn towards now.
    expect(CredentialSchedule.planMove(held, keys, late, now + 60_000, 0)).toBeUndefined()
    expect(CredentialSchedule.nextRefresh(held, keys, late, now)).toEqual({
      _tag: "KeyRotated",
      at: late?.at,
      retiresAt: now + HOUR,
    })
    // A credential already of the newest key has nothing to move to.
    expect(CredentialSchedule.planMove({ ...held, keyId: 2 }, keys, undefined, now, 0.5)).toBeUndefined()
  })

  it("spreads a move over a minute when the key set does not say when the old key retires", () => {
    const move = CredentialSchedule.planMove(held, [key(1), key(2)], undefined, now, 0.5)
    expect(move).toEqual({ newestKeyId: 2, at: now + CredentialSchedule.DEFAULT_SPREAD_MS / 2 })
  })

  it("is due at once when its key is gone from the set, and then retries slowly", () => {
    expect(CredentialSchedule.nextRefresh(held, [key(2)], undefined, now)).toEqual({
      _tag: "KeyRetired",
      at: now,
      keyId: 1,
    })
    expect(CredentialSchedule.retryDelay(held, [key(2)], now)).toBe(CredentialSchedule.MAX_RETRY_MS)
    // Expired too: still every 30 s, not every second.
    const expired = { ...held, expiresAt: now - HOUR }
    expect(CredentialSchedule.retryDelay(expired, [key(2)], now)).toBe(CredentialSchedule.MAX_RETRY_MS)
  })

  it("retries sooner as the deadline nears, never under a second", () => {
    const retiring = [key(1, now + 80_000), key(2)]
    expect(CredentialSchedule.retryDelay(held, retiring, now)).toBe(10_000)
    expect(CredentialSchedule.retryDelay(held, retiring, now + 76_000)).toBe(1_000)
    expect(CredentialSchedule.retryDelay(held, [key(1)], now)).toBe(CredentialSchedule.MAX_RETRY_MS)
  })

  it("knows nothing before the first key sync: only the lifetime counts", () => {
    const firstContact = [{ id: -1, publicKey: new Uint8Array(32) }]
    expect(CredentialSchedule.nextRefresh(held, firstContact, undefined, now)._tag).toBe("Lifetime")
  })
})

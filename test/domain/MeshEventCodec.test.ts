import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import * as MeshEventCodec from "../../src/domain/MeshEventCodec.js"

const key = Ed25519.generate()
const NOW = Date.parse("2026-06-01T00:00:00Z")

describe("mesh event sequences", () => {
  it("the sequence is signed with the event, and an event without one is refused", () => {
    const event = { type: "unbanned", peerId: "12D3KooWpeer", sequence: 7 } as const
    expect(MeshEventCodec.decode(MeshEventCodec.encode(event, key.seed, NOW), [key.publicKey], NOW)).toEqual(
      Either.right(event),
    )
    const unsequenced = MeshEventCodec.encode({ ...event, sequence: 0 }, key.seed, NOW)
    expect(MeshEventCodec.decode(unsequenced, [key.publicKey], NOW)).toEqual(Either.left("no sequence"))
  })

  it("an event is newer only than what was applied about the same subject", () => {
    const latest = new Map([[MeshEventCodec.subjectOf({ type: "banned", peerId: "a", sequence: 2 }), 2]])
    expect(MeshEventCodec.isNewer(latest, { type: "unbanned", peerId: "a", sequence: 1 })).toBe(false)
    expect(MeshEventCodec.isNewer(latest, { type: "banned", peerId: "a", sequence: 2 })).toBe(false)
    expect(MeshEventCodec.isNewer(latest, { type: "unbanned", peerId: "a", sequence: 3 })).toBe(true)
    expect(MeshEventCodec.isNewer(latest, { type: "unbanned", peerId: "b", sequence: 1 })).toBe(true)
    expect(MeshEventCodec.isNewer(latest, { type: "policy_update", sequence: 1 })).toBe(true)
  })
})

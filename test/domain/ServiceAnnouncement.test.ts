import { create, toBinary } from "@bufbuild/protobuf"
import { timestampFromMs } from "@bufbuild/protobuf/wkt"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as ServiceAnnouncement from "../../src/domain/ServiceAnnouncement.js"
import { ServiceAnnounceSchema, ServiceType } from "../../src/gen/mesh_pb.js"

const NOW = 1_800_000_000_000
const PEER = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"

const announcement: ServiceAnnouncement.Announcement = {
  peerId: PEER,
  type: "inference",
  service: "llm",
  keys: ["tiny-1", "tiny-2"],
  labels: { zone: "eu-1" },
  activeRequests: 3,
  announcedAtMs: NOW,
}

const reason = (result: Either.Either<unknown, string>) => (Either.isLeft(result) ? result.left : "accepted")

describe("service announcements", () => {
  it("round-trip when the sender is the peer they name and the time is near ours", () => {
    const bytes = ServiceAnnouncement.encode(announcement)
    expect(ServiceAnnouncement.decode(bytes, PEER, NOW + 60_000)).toEqual(Either.right(announcement))
    expect(Either.isRight(ServiceAnnouncement.decode(bytes, PEER, NOW - 120_000))).toBe(true)
  })

  it("are dropped when they name another peer, are stale or from the future, or are malformed", () => {
    const bytes = ServiceAnnouncement.encode(announcement)
    expect(reason(ServiceAnnouncement.decode(bytes, "12D3KooWother", NOW))).toBe("peer_id is not the sender")
    expect(reason(ServiceAnnouncement.decode(bytes, PEER, NOW + 120_001))).toBe("too far from our clock")
    expect(reason(ServiceAnnouncement.decode(bytes, PEER, NOW - 120_001))).toBe("too far from our clock")
    expect(reason(ServiceAnnouncement.decode(new Uint8Array([0xff, 0xff, 0xff]), PEER, NOW))).toBe(
      "not a ServiceAnnounce",
    )
    const message = (fields: Record<string, unknown>) =>
      toBinary(
        ServiceAnnounceSchema,
        create(ServiceAnnounceSchema, {
          peerId: PEER,
          type: ServiceType.MCP,
          serviceName: "tools",
          keys: ["echo"],
          announceTime: timestampFromMs(NOW),
          ...fields,
        }),
      )
    expect(reason(ServiceAnnouncement.decode(message({}), PEER, NOW))).toBe("accepted")
    expect(reason(ServiceAnnouncement.decode(message({ type: ServiceType.EGRESS }), PEER, NOW))).toBe(
      "unknown service type",
    )
    expect(reason(ServiceAnnouncement.decode(message({ serviceName: "../x" }), PEER, NOW))).toBe("invalid service name")
    const many = Array.from({ length: 65 }, (_, i) => `tool-${i}`)
    expect(reason(ServiceAnnouncement.decode(message({ keys: many }), PEER, NOW))).toBe("too many keys")
    expect(reason(ServiceAnnouncement.decode(message({ keys: ["x".repeat(257)] }), PEER, NOW))).toBe("invalid key")
    expect(reason(ServiceAnnouncement.decode(message({ labels: { "bad key": "v" } }), PEER, NOW))).toBe(
      "invalid labels",
    )
    expect(reason(ServiceAnnouncement.decode(message({ announceTime: undefined }), PEER, NOW))).toBe("no announce time")
  })

  it("carry at most 64 keys", () => {
    const keys = Array.from({ length: 100 }, (_, i) => `m-${String(i).padStart(3, "0")}`)
    const decoded = ServiceAnnouncement.decode(ServiceAnnouncement.encode({ ...announcement, keys }), PEER, NOW)
    expect(Either.map(decoded, (a) => a.keys)).toEqual(Either.right(keys.slice(0, 64)))
  })
})

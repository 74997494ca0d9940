import { describe, expect, it } from "@effect/vitest"
import * as ServiceKeys from "../../src/domain/ServiceKeys.js"
import { ServiceType } from "../../src/gen/mesh_pb.js"

describe("service keys", () => {
  it("DHT keys are CIDv1, raw codec, over sha2-256 of mesh:service:<type>[:<name>]", () => {
    // Values computed with multiformats' own sha256 hasher, not ours.
    expect(ServiceKeys.cid("mcp").toString()).toBe("bafkreibvsy2h4rtqjq2fnrdanmtz7rtzyuy5skowoops7hcrsssu4njmg4")
    expect(ServiceKeys.cid("mcp", "tools").toString()).toBe(
      "bafkreihc7siowmqxfhriwzspwilwsdhiffu4m77mh5s7zmd2un7pt5fnsu",
    )
    expect(ServiceKeys.cid("mcp").version).toBe(1)
    expect(ServiceKeys.cid("inference").equals(ServiceKeys.cid("mcp"))).toBe(false)
    expect(ServiceKeys.dhtKeyText("a2a", "helper")).toBe("mesh:service:a2a:helper")
  })

  it("a key's gossip topic is per type and the first 16 hex digits of its sha256", () => {
    expect(ServiceKeys.topic("mcp", "echo")).toBe("/mesh/discovery/v1/mcp/092c79e8f80e559e")
    expect(ServiceKeys.topic("inference", "echo")).toBe("/mesh/discovery/v1/inference/092c79e8f80e559e")
  })

  it("service types map to the wire enum and back; egress and unknown values are no service type here", () => {
    for (const type of ["mcp", "inference", "a2a"] as const) {
      expect(ServiceKeys.fromWire(ServiceKeys.toWire(type))).toBe(type)
    }
    expect(ServiceKeys.fromWire(ServiceType.EGRESS)).toBeUndefined()
    expect(ServiceKeys.fromWire(ServiceType.UNSPECIFIED)).toBeUndefined()
    expect(ServiceKeys.fromWire(42 as ServiceType)).toBeUndefined()
  })
})

import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { relayOf, whyRelayed } from "../../src/node/debug/RelayReasons.js"

describe("why a path is relayed", () => {
  it("names the router a circuit address runs through", () => {
    expect(relayOf("/ip4/11.0.0.2/tcp/4001/p2p/12D3KooWRouter/p2p-circuit/p2p/12D3KooWPeer")).toBe("12D3KooWRouter")
    expect(relayOf("/p2p/12D3KooWRouter/p2p-circuit")).toBe("12D3KooWRouter")
    expect(relayOf("/ip4/11.0.0.2/tcp/4001/p2p/12D3KooWPeer")).toBe("")
  })

  it("says a direct dial failed, and where, before anything else", () => {
    const why = whyRelayed(["/ip4/11.0.2.2/tcp/1"], Option.some("/ip4/11.0.2.2/tcp/1: timed out"))
    expect(why.reason).toBe("direct_dial_failed")
    expect(why.detail).toContain("timed out")
  })

  it("tells a peer behind NAT (private addresses only) from one without addresses and one not tried", () => {
    expect(whyRelayed(["/ip4/192.168.2.2/tcp/1", "/ip4/127.0.0.1/tcp/1"], Option.none()).reason).toBe(
      "no_public_address",
    )
    expect(whyRelayed([], Option.none()).reason).toBe("no_direct_address")
    expect(whyRelayed(["/ip4/192.168.2.2/tcp/1", "/ip4/11.0.2.2/tcp/1"], Option.none()).reason).toBe("not_tried")
  })
})

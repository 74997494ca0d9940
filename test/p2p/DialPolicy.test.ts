import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import * as DialPolicy from "../../src/p2p/DialPolicy.js"

const PEER = "12D3KooWPeer"
const HOME = `/ip4/192.168.2.2/tcp/4001/p2p/${PEER}`
const LOOPBACK = `/ip4/127.0.0.1/tcp/4001/p2p/${PEER}`
const PUBLIC = `/ip4/11.0.2.2/tcp/4001/p2p/${PEER}`
const RELAY_1 = `/p2p/12D3KooWRouterOne/p2p-circuit/p2p/${PEER}`
const RELAY_2 = `/p2p/12D3KooWRouterTwo/p2p-circuit/p2p/${PEER}`

const starts = (plan: ReadonlyArray<DialPolicy.Attempt>) =>
  plan.map((a) => [a.address, Duration.toMillis(a.delay)] as const)

describe("the dial plan", () => {
  it("tries public addresses before private ones, and the relays after the head start", () => {
    const plan = DialPolicy.plan([HOME, LOOPBACK, PUBLIC], [RELAY_1, RELAY_2])
    expect(starts(plan)).toEqual([
      [PUBLIC, 0],
      [HOME, 250],
      [LOOPBACK, 500],
      [RELAY_1, 1_000],
      [RELAY_2, 1_250],
    ])
    expect(plan.map((a) => a.relayed)).toEqual([false, false, false, true, true])
    expect(plan.map((a) => Duration.toMillis(a.timeout))).toEqual([3_000, 3_000, 3_000, 8_000, 8_000])
  })

  it("starts the relays at once when the peer has no address of its own", () => {
    expect(starts(DialPolicy.plan([], [RELAY_1, RELAY_2]))).toEqual([
      [RELAY_1, 0],
      [RELAY_2, 250],
    ])
  })

  it("starts the relays at once when the last direct dial of the peer failed", () => {
    expect(starts(DialPolicy.plan([HOME], [RELAY_1, RELAY_2], true))).toEqual([
      [HOME, 0],
      [RELAY_1, 0],
      [RELAY_2, 250],
    ])
  })

  it("does not wait on a private address longer than the relays' head start", () => {
    const plan = DialPolicy.plan([HOME], [RELAY_1])
    const relay = plan.find((a) => a.relayed)
    expect(relay === undefined ? Number.POSITIVE_INFINITY : Duration.toMillis(relay.delay)).toBeLessThan(
      Duration.toMillis(DialPolicy.DIRECT_DIAL_TIMEOUT),
    )
  })

  it("tells public addresses from private, shared, loopback and link-local ones", () => {
    for (const address of [
      "/ip4/11.0.0.2/tcp/1",
      "/ip4/8.8.8.8/tcp/1",
      "/ip6/2001:4860::1/tcp/1",
      "/dns4/x.example/tcp/1",
    ]) {
      expect([address, DialPolicy.isPublic(address)]).toEqual([address, true])
    }
    for (const address of [
      "/ip4/10.1.2.3/tcp/1",
      "/ip4/172.16.0.1/tcp/1",
      "/ip4/172.31.255.1/tcp/1",
      "/ip4/192.168.1.2/tcp/1",
      "/ip4/127.0.0.1/tcp/1",
      "/ip4/169.254.1.1/tcp/1",
      "/ip4/100.64.0.1/tcp/1",
      "/ip6/::1/tcp/1",
      "/ip6/fd00::2/tcp/1",
      "/ip6/fe80::1/tcp/1",
    ]) {
      expect([address, DialPolicy.isPublic(address)]).toEqual([address, false])
    }
    expect(DialPolicy.isPublic("/ip4/172.32.0.1/tcp/1")).toBe(true)
  })
})

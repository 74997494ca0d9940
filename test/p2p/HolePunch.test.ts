import { create, toBinary } from "@bufbuild/protobuf"
import { describe, expect, it } from "@effect/vitest"
import type { DialTransportOptions, Transport } from "@libp2p/interface"
import { multiaddr } from "@multiformats/multiaddr"
import { Either } from "effect"
import { HolePunch_Type, HolePunchSchema } from "../../src/gen/mesh_pb.js"
import { DialPorts, endpointOf, fromPorts } from "../../src/p2p/DialPorts.js"
import * as Punch from "../../src/p2p/HolePunch.js"
import * as RelayMeter from "../../src/p2p/RelayMeter.js"
import { plan, retryDelayMs } from "../../src/services/mesh/HolePunch.js"

const raw = (type: HolePunch_Type, addrs: ReadonlyArray<Uint8Array>, lanAddrs: ReadonlyArray<Uint8Array> = []) =>
  toBinary(HolePunchSchema, create(HolePunchSchema, { type, addrs: [...addrs], lanAddrs: [...lanAddrs] }))

const PEER = "12D3KooWRYp7kaWtgM9ccyrrTsb7Fd7pfbBHnZYqR9QqAhrcKfpC"

describe("the /mesh/punch/1.0.0 messages", () => {
  it("a CONNECT round-trips; a SYNC carries nothing", () => {
    const offer = { addrs: [multiaddr("/ip4/11.0.1.2/tcp/40001")], lanAddrs: [multiaddr("/ip4/192.168.1.2/tcp/4001")] }
    const back = Either.getOrThrow(Punch.decode(Punch.encode({ type: "connect", offer })))
    expect(back.type).toBe("connect")
    if (back.type !== "connect") return
    expect(back.offer.addrs.map(String)).toEqual(["/ip4/11.0.1.2/tcp/40001"])
    expect(back.offer.lanAddrs.map(String)).toEqual(["/ip4/192.168.1.2/tcp/4001"])
    expect(Either.getOrThrow(Punch.decode(Punch.encode({ type: "sync" })))).toEqual({ type: "sync" })
  })

  it("a peer's addresses are kept only when plain TCP over IP, at most 8 of them", () => {
    const good = multiaddr("/ip4/11.0.2.2/tcp/40002").bytes
    const bad = [
      multiaddr(`/ip4/11.0.2.2/tcp/40002/p2p/${PEER}`).bytes,
      multiaddr("/ip4/11.0.2.2/udp/40002/quic-v1").bytes,
      multiaddr("/dns4/example.com/tcp/1").bytes,
      multiaddr("/ip4/11.0.2.2/tcp/0").bytes,
      new Uint8Array([0xff, 0xff, 0xff]),
    ]
    const decoded = Either.getOrThrow(Punch.decode(raw(HolePunch_Type.CONNECT, [...bad, good], bad)))
    expect(decoded.type === "connect" && decoded.offer.addrs.map(String)).toEqual(["/ip4/11.0.2.2/tcp/40002"])
    expect(decoded.type === "connect" && decoded.offer.lanAddrs).toEqual([])
    const many = Either.getOrThrow(
      Punch.decode(
        raw(
          HolePunch_Type.CONNECT,
          Array.from({ length: 20 }, () => good),
        ),
      ),
    )
    expect(many.type === "connect" && many.offer.addrs.length).toBe(Punch.MAX_ADDRESSES)
  })

  it("garbage and unknown types are refused", () => {
    expect(Either.isLeft(Punch.decode(new Uint8Array([0x0a, 0xff, 0xff])))).toBe(true)
    expect(Either.isLeft(Punch.decode(raw(HolePunch_Type.UNSPECIFIED, [])))).toBe(true)
    expect(Either.isLeft(Punch.decode(raw(7 as HolePunch_Type, [])))).toBe(true)
  })

  it("the plain address of a listen address drops the peer id and refuses circuits", () => {
    expect(String(Punch.plainOf(multiaddr(`/ip4/192.168.1.2/tcp/4001/p2p/${PEER}`)))).toBe("/ip4/192.168.1.2/tcp/4001")
    expect(Punch.plainOf(multiaddr(`/ip4/11.0.0.2/tcp/1/p2p/${PEER}/p2p-circuit`))).toBeUndefined()
  })
})

describe("the plan each side reaches", () => {
  const natted = (host: string) => ({ hosts: [host], listensPublicly: false })
  it("behind two NATs both punch; behind one NAT the initiator dials the other's listen address", () => {
    expect(plan({ mine: natted("11.0.1.2"), theirs: natted("11.0.2.2"), initiator: true })).toBe("punch")
    expect(plan({ mine: natted("11.0.1.2"), theirs: natted("11.0.2.2"), initiator: false })).toBe("punch")
    expect(plan({ mine: natted("11.0.1.2"), theirs: natted("11.0.1.2"), initiator: true })).toBe("lan")
    expect(plan({ mine: natted("11.0.1.2"), theirs: natted("11.0.1.2"), initiator: false })).toBe("wait")
  })
  it("a side reachable where it listens is dialled by the other, and waits", () => {
    const reachable = { hosts: ["11.0.0.9"], listensPublicly: true }
    expect(plan({ mine: natted("11.0.1.2"), theirs: reachable, initiator: false })).toBe("dial")
    expect(plan({ mine: reachable, theirs: natted("11.0.1.2"), initiator: true })).toBe("wait")
    const other = { hosts: ["11.0.0.10"], listensPublicly: true }
    expect(plan({ mine: reachable, theirs: other, initiator: true })).toBe("dial")
    expect(plan({ mine: reachable, theirs: other, initiator: false })).toBe("wait")
  })
  it("without a public address on either side there is nothing to do", () => {
    expect(plan({ mine: { hosts: [], listensPublicly: false }, theirs: natted("11.0.2.2"), initiator: true })).toBe(
      "none",
    )
  })
  it("retries back off to every 5 minutes", () => {
    expect([1, 2, 3, 4, 9].map(retryDelayMs)).toEqual([10_000, 30_000, 120_000, 300_000, 300_000])
  })
})

describe("dials bound to a port", () => {
  it("only a registered target's dial leaves from its port, with its role; unbinding ends it", async () => {
    const seen: Array<Record<string, unknown>> = []
    const fake = (() => ({
      dial: async (_address: unknown, options: DialTransportOptions) => {
        seen.push(options as unknown as Record<string, unknown>)
        return undefined as never
      },
    })) as unknown as (components: unknown) => Transport
    const ports = new DialPorts()
    const transport = fromPorts(ports)(fake)({})
    const target = multiaddr("/ip4/11.0.2.2/tcp/40002")
    const upgraded: Array<string> = []
    const upgrader = {
      upgradeOutbound: async (connection: { direction: string }) => upgraded.push(connection.direction),
    }
    const options = { upgrader } as unknown as DialTransportOptions
    const unbind = ports.bind(target, { localPort: 40001, initiator: false })
    await transport.dial(target.encapsulate(`/p2p/${PEER}`), options)
    await transport.dial(multiaddr("/ip4/11.0.2.2/tcp/40003"), options)
    unbind()
    await transport.dial(target, options)
    // The answering side's connection is upgraded as an inbound one (yamux picks its side from it).
    for (const seenOptions of seen) {
      await (seenOptions.upgrader as typeof upgrader).upgradeOutbound({ direction: "outbound" })
    }
    expect(upgraded).toEqual(["inbound", "outbound", "outbound"])
    expect(seen.map((o) => [o.localPort, o.initiator])).toEqual([
      [40001, false],
      [undefined, undefined],
      [undefined, undefined],
    ])
    expect(endpointOf(multiaddr(`/ip4/11.0.0.2/tcp/1/p2p/${PEER}/p2p-circuit`))).toBeUndefined()
  })
})

describe("the relay meter", () => {
  it("counts both directions of a relayed connection on its stop stream", async () => {
    const listeners: Array<(event: { data: { byteLength: number } }) => void> = []
    const stream = {
      addEventListener: (_: string, listener: (event: { data: { byteLength: number } }) => void) =>
        listeners.push(listener),
      send: (_: { byteLength: number }) => true,
    }
    const relay = { stopHop: async () => stream }
    let counted = 0
    expect(RelayMeter.install(relay as never, (bytes) => (counted += bytes))).toBe(true)
    const opened = (await (relay.stopHop as () => Promise<typeof stream>)()) as typeof stream
    opened.send({ byteLength: 1000 })
    for (const listener of listeners) listener({ data: { byteLength: 24 } })
    expect(counted).toBe(1024)
    expect(RelayMeter.install({} as never, () => {})).toBe(false)
  })
})

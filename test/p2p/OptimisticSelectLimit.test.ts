/**
 * An optimistic stream is made by the muxer, past `newStream`: it must still count against the protocol's outbound
 * cap as libp2p reckons it (the handler's `maxOutboundStreams`, else libp2p's default), between two real hosts.
 */
import { type Connection, type Libp2p, type Stream, TooManyOutboundProtocolStreamsError } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as OptimisticSelect from "../../src/p2p/OptimisticSelect.js"
import { bareHost } from "./bareHost.js"

const CAPPED = "/mesh/test/capped/1.0.0"
const BURST = "/mesh/test/burst/1.0.0"
const UNREGISTERED = "/mesh/test/unregistered/1.0.0"
const CAP = 3
/** libp2p's registrar default. */
const DEFAULT_CAP = 64

let dialer: Libp2p
let listener: Libp2p
let connection: Connection

beforeAll(async () => {
  dialer = await bareHost(1)
  listener = await bareHost(2)
  const hold = () => undefined
  await listener.handle([CAPPED, BURST, UNREGISTERED], hold, { maxInboundStreams: 1000 })
  // As PeerIngress registers its protocol on every node: the dialer's own registration carries the outbound cap.
  await dialer.handle([CAPPED, BURST], hold, { maxOutboundStreams: CAP })
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
})

const openMany = async (protocol: string, count: number): Promise<Array<Stream>> => {
  const streams: Array<Stream> = []
  for (let i = 0; i < count; i++) {
    const stream = await OptimisticSelect.open(connection, protocol)
    if (stream === undefined) throw new Error("the muxer was out of reach")
    streams.push(stream)
  }
  return streams
}

describe("OptimisticSelect.open and the outbound stream cap", () => {
  it("refuses a stream past the handler's maxOutboundStreams, and allows one again when one ends", async () => {
    const streams = await openMany(CAPPED, CAP)
    await expect(OptimisticSelect.open(connection, CAPPED)).rejects.toBeInstanceOf(TooManyOutboundProtocolStreamsError)
    // libp2p's own path sees the same count.
    await expect(connection.newStream(CAPPED)).rejects.toBeInstanceOf(TooManyOutboundProtocolStreamsError)
    streams[0]?.abort(new Error("done"))
    await expect(OptimisticSelect.open(connection, CAPPED)).resolves.toBeDefined()
  })

  it("holds opens made at the same moment to the cap", async () => {
    const opened = await Promise.allSettled(
      Array.from({ length: CAP + 2 }, () => OptimisticSelect.open(connection, BURST)),
    )
    expect(opened.filter((o) => o.status === "fulfilled")).toHaveLength(CAP)
    for (const refused of opened.filter((o) => o.status === "rejected")) {
      expect(refused.reason).toBeInstanceOf(TooManyOutboundProtocolStreamsError)
    }
    expect(connection.streams.filter((s) => s.protocol === BURST && s.status === "open")).toHaveLength(CAP)
  })

  it("holds a protocol the dialer does not register to libp2p's default", async () => {
    await openMany(UNREGISTERED, DEFAULT_CAP)
    await expect(OptimisticSelect.open(connection, UNREGISTERED)).rejects.toBeInstanceOf(
      TooManyOutboundProtocolStreamsError,
    )
  })
})

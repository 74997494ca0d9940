import { noise } from "@chainsafe/libp2p-noise"
import { describe, expect, it } from "@effect/vitest"
import type { Libp2p, PeerData } from "@libp2p/interface"
import { tcp } from "@libp2p/tcp"
import { yamux } from "@libp2p/yamux"
import { createLibp2p } from "libp2p"
import * as KnownProtocols from "../../src/p2p/KnownProtocols.js"

const host = () =>
  createLibp2p({
    addresses: { listen: ["/ip4/127.0.0.1/tcp/0"] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
  })

const until = async (what: string, done: () => boolean | Promise<boolean>) => {
  const deadline = Date.now() + 10_000
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not reached within 10s: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * The merges of `peer`'s record that reach `node`'s peer store itself, by protocol, beneath what KnownProtocols
 * answers from memory (the node records its own protocols too, when it registers a handler).
 */
const countStoreMerges = (node: Libp2p, peer: Libp2p) => {
  const counts = new Map<string, number>()
  const merge = node.peerStore.merge.bind(node.peerStore)
  node.peerStore.merge = (id, data: PeerData, options) => {
    if (id.equals(peer.peerId))
      for (const protocol of data.protocols ?? []) counts.set(protocol, (counts.get(protocol) ?? 0) + 1)
    return merge(id, data, options)
  }
  return (protocol: string) => counts.get(protocol) ?? 0
}

describe("known protocols", () => {
  it("records a peer's protocol once per connection, not once per stream, and keeps the peer store right", async () => {
    const [caller, server] = await Promise.all([host(), host()])
    try {
      const merges = countStoreMerges(server, caller)
      KnownProtocols.install(server)
      let handled = 0
      const handler = async (stream: { close: () => Promise<void> }) => {
        handled++
        await stream.close()
      }
      await server.handle("/t/1.0.0", handler)
      await server.handle("/t/2.0.0", handler)
      const open = async (protocol: string) => {
        const before = handled
        const stream = await caller.dialProtocol(server.getMultiaddrs(), protocol)
        await until(`${protocol} handled`, () => handled > before)
        await stream.close()
      }
      const protocols = async () => (await server.peerStore.get(caller.peerId)).protocols

      // The first stream of a new connection may be negotiated before libp2p lists the connection: it is not
      // remembered then, and the second records again.
      await open("/t/1.0.0")
      await open("/t/1.0.0")
      const settled = merges("/t/1.0.0")
      expect(settled).toBeGreaterThanOrEqual(1)
      expect(settled).toBeLessThanOrEqual(2)
      for (let i = 0; i < 5; i++) await open("/t/1.0.0")
      expect(merges("/t/1.0.0")).toBe(settled)
      expect(await protocols()).toContain("/t/1.0.0")

      // A protocol the record does not hold yet goes to the store, once.
      await open("/t/2.0.0")
      await open("/t/2.0.0")
      expect(merges("/t/2.0.0")).toBe(1)
      expect(await protocols()).toEqual(expect.arrayContaining(["/t/1.0.0", "/t/2.0.0"]))
      expect(merges("/t/1.0.0")).toBe(settled)

      // Disconnected, the peer is forgotten: its record may change without a word to us while it is away.
      await caller.hangUp(server.peerId)
      await until("the server sees the caller gone", () => server.getConnections(caller.peerId).length === 0)
      await open("/t/1.0.0")
      await open("/t/1.0.0")
      const reconnected = merges("/t/1.0.0")
      expect(reconnected).toBeGreaterThan(settled)

      // Deleted from the store: the next stream records the protocol again.
      await server.peerStore.delete(caller.peerId)
      await open("/t/1.0.0")
      expect(merges("/t/1.0.0")).toBe(reconnected + 1)
      expect(await protocols()).toContain("/t/1.0.0")
    } finally {
      await Promise.all([caller.stop(), server.stop()])
    }
  })
})

/**
 * libp2p records that a peer speaks a protocol each time one of the peer's streams for it is negotiated, and on an
 * inbound stream it waits for that before the handler has the stream: a write lock, a read and decode of the peer's
 * record, a merge, a compare. After the first stream of a protocol from a connected peer the record already says so,
 * so the proxy's one-stream-per-request paid all of that again on every request, on the serving node's critical path
 * (about 6% of its busy time). Here a merge that only adds protocols the record is known to hold is answered from
 * memory. What is known is the record as libp2p last reported it (`peer:update`, or the answer to a merge), kept for
 * connected peers only and forgotten when the last connection to one closes or the peer is deleted from the store.
 */
import type { Libp2p, Peer, PeerData, PeerId, PeerStore } from "@libp2p/interface"

/** Whether `data` does nothing but add protocols that `peer` already lists. */
const adds = (peer: Peer, data: Partial<PeerData>): boolean => {
  for (const key of Object.keys(data) as Array<keyof PeerData>) {
    if (key !== "protocols" && data[key] !== undefined) return true
  }
  return (data.protocols ?? []).some((protocol) => !peer.protocols.includes(protocol))
}

export const install = (libp2p: Libp2p): void => {
  const store: PeerStore = libp2p.peerStore
  const known = new Map<string, Peer>()
  const merge = store.merge.bind(store)
  const remove = store.delete.bind(store)

  store.merge = async (id: PeerId, data: PeerData, options?: Parameters<PeerStore["merge"]>[2]): Promise<Peer> => {
    const key = id.toString()
    const peer = known.get(key)
    if (peer !== undefined && !adds(peer, data)) return peer
    const merged = await merge(id, data, options)
    if (libp2p.getConnections(id).length > 0) known.set(key, merged)
    return merged
  }
  store.delete = async (id: PeerId, options?: Parameters<PeerStore["delete"]>[1]): Promise<void> => {
    known.delete(id.toString())
    return remove(id, options)
  }
  libp2p.addEventListener("peer:update", (event) => {
    const key = event.detail.peer.id.toString()
    if (known.has(key)) known.set(key, event.detail.peer)
  })
  libp2p.addEventListener("peer:disconnect", (event) => {
    known.delete(event.detail.toString())
  })
}

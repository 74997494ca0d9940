/**
 * Counts the bytes a router relays, its cost for members that have no direct path. Every relayed connection is a hop
 * stream from its source joined to a stop stream the relay opens to its destination (circuit-relay-v2's `stopHop`);
 * both directions pass the stop stream, inbound (destination to source, its `message` events) and outbound (source
 * to destination, its `send`), so counting there sees each relayed byte once. The relay server keeps `stopHop`
 * internal: this wraps it on the one instance, and does nothing if a later version renames it.
 */
import type { CircuitRelayService } from "@libp2p/circuit-relay-v2"

interface MeteredStream {
  addEventListener(type: "message", listener: (event: { data: { byteLength: number } }) => void): void
  send(data: { byteLength: number }): boolean
}

type StopHop = (...args: Array<unknown>) => Promise<MeteredStream | undefined>

export const install = (relay: CircuitRelayService, count: (bytes: number) => void): boolean => {
  const target = relay as unknown as { stopHop?: StopHop }
  const stopHop = target.stopHop
  if (typeof stopHop !== "function") return false
  target.stopHop = async (...args: Array<unknown>) => {
    const stream = await stopHop.apply(relay, args)
    if (stream === undefined) return stream
    stream.addEventListener("message", (event) => count(event.data.byteLength))
    const send = stream.send.bind(stream)
    stream.send = (data) => {
      count(data.byteLength)
      return send(data)
    }
    return stream
  }
  return true
}

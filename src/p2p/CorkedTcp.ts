/**
 * libp2p's TCP transport with each connection's writes gathered per tick. Noise writes every frame as two buffers
 * (its length prefix, then the ciphertext) and @libp2p/tcp hands each to `socket.write`, one system call apiece; a
 * small proxied request is several frames each way (the stream's open, its data, its close, a window update for each
 * data frame received). Corked at the first write of a tick and uncorked when the tick's work is done
 * (`process.nextTick`, which runs after the promise jobs queued so far), those go out as one `writev`. Nothing waits
 * longer than the tick that wrote it.
 */
import { Socket } from "node:net"
import type {
  CreateListenerOptions,
  DialTransportOptions,
  Listener,
  MultiaddrConnection,
  Transport,
  Upgrader,
} from "@libp2p/interface"
import type { Multiaddr } from "@multiformats/multiaddr"

/** What @libp2p/tcp's connection holds beyond the interface: its socket, and the method the muxer's writes reach. */
interface SocketConnection {
  readonly socket?: unknown
  sendData?: (data: unknown) => unknown
}

const corkPerTick = (connection: MultiaddrConnection): void => {
  const target = connection as unknown as SocketConnection
  const socket = target.socket
  const sendData = target.sendData
  if (!(socket instanceof Socket) || typeof sendData !== "function") return
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  target.sendData = (data: unknown) => {
    if (!corked && !socket.destroyed) {
      corked = true
      socket.cork()
      process.nextTick(uncork)
    }
    return sendData.call(target, data)
  }
}

/** The upgrader as it is, but every connection it upgrades is corked per tick first. */
const corking = (upgrader: Upgrader): Upgrader =>
  new Proxy(upgrader, {
    get(target, property) {
      if (property === "upgradeOutbound" || property === "upgradeInbound") {
        const upgrade = target[property] as (connection: MultiaddrConnection, options: unknown) => unknown
        return (connection: MultiaddrConnection, options: unknown) => {
          corkPerTick(connection)
          return upgrade.call(target, connection, options)
        }
      }
      const value = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    },
  })

/** Wraps a TCP transport factory (`tcp()`): its dials and listeners upgrade corked connections. */
export const corked =
  <C>(factory: (components: C) => Transport) =>
  (components: C): Transport => {
    const transport = factory(components)
    const dial = transport.dial.bind(transport)
    const createListener = transport.createListener.bind(transport)
    transport.dial = (address: Multiaddr, options: DialTransportOptions) =>
      dial(address, { ...options, upgrader: corking(options.upgrader) })
    transport.createListener = (options: CreateListenerOptions): Listener =>
      createListener({ ...options, upgrader: corking(options.upgrader) })
    return transport
  }

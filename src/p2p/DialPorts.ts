/**
 * Dials that leave from a chosen local port. A TCP hole punch works only if each side's SYN leaves from the port it
 * told the other: its NAT keeps that port (a cone-like NAT maps a local port to the same public one whatever the
 * destination), and the peer's SYN to it then matches the mapping the first SYN opened. libp2p's TCP transport dials
 * from a fresh ephemeral port, so a hole punch registers `target address → local port` here for the one dial it makes
 * (HolePunch.ts); every other dial is left as it is. @libp2p/tcp hands the dial options to `net.connect`, which binds
 * `localPort` before connecting. The same entry carries the side's role in the connection's upgrade: after a
 * simultaneous open one side must answer multistream-select and noise (`initiator: false`, which libp2p's upgrader
 * reads), and libp2p 3.3's dial queue drops that option on its way to the transport; yamux picks its side from the
 * connection's direction, not the upgrader's, so the answering side's connection is marked inbound as well.
 */
import type { DialTransportOptions, MultiaddrConnection, Transport, Upgrader } from "@libp2p/interface"
import type { Multiaddr } from "@multiformats/multiaddr"

/** `host:port` of a TCP multiaddr (any trailing /p2p/ ignored), or undefined for other addresses. */
export const endpointOf = (address: Multiaddr): string | undefined => {
  let host: string | undefined
  let port: string | undefined
  for (const component of address.getComponents()) {
    if ((component.name === "ip4" || component.name === "ip6") && host === undefined) host = component.value
    else if (component.name === "tcp" && port === undefined) port = component.value
    else if (component.name === "p2p-circuit") return undefined
  }
  return host === undefined || port === undefined ? undefined : `${host}:${port}`
}

export interface Binding {
  readonly localPort: number
  /** false: this side answers the upgrade (multistream-select and noise) on the connection its dial opens. */
  readonly initiator: boolean
}

/** How each registered target is dialled. A libp2p service of nodes, so the host's owner reaches it. */
export class DialPorts {
  readonly [Symbol.toStringTag] = "@mesh/dial-ports"
  private readonly bindings = new Map<string, Binding>()

  /** Dials to `target` leave from the binding's port until the returned function is called. */
  bind(target: Multiaddr, binding: Binding): () => void {
    const key = endpointOf(target)
    if (key === undefined) return () => {}
    this.bindings.set(key, binding)
    return () => {
      if (this.bindings.get(key) === binding) this.bindings.delete(key)
    }
  }

  bindingFor(target: Multiaddr): Binding | undefined {
    const key = endpointOf(target)
    return key === undefined ? undefined : this.bindings.get(key)
  }
}

/** The upgrader as it is, but the connections it upgrades as a dialer's are marked inbound first (see above). */
const answering = (upgrader: Upgrader): Upgrader =>
  new Proxy(upgrader, {
    get(target, property) {
      if (property === "upgradeOutbound") {
        return (connection: MultiaddrConnection, options: Parameters<Upgrader["upgradeOutbound"]>[1]) => {
          ;(connection as { direction: "inbound" | "outbound" }).direction = "inbound"
          return target.upgradeOutbound(connection, options)
        }
      }
      const value = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    },
  })

/** Wraps a TCP transport factory: a dial to a registered target leaves from its registered local port. */
export const fromPorts =
  (ports: DialPorts) =>
  <C>(factory: (components: C) => Transport) =>
  (components: C): Transport => {
    const transport = factory(components)
    const dial = transport.dial.bind(transport)
    transport.dial = (address: Multiaddr, options: DialTransportOptions) => {
      const binding = ports.bindingFor(address)
      if (binding === undefined) return dial(address, options)
      const bound: DialTransportOptions & { localPort: number; initiator: boolean } = {
        ...options,
        localPort: binding.localPort,
        initiator: binding.initiator,
        upgrader: binding.initiator ? options.upgrader : answering(options.upgrader),
      }
      return dial(address, bound)
    }
    return transport
  }

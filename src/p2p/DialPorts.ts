/**
 * Dials that leave from a chosen local port. A TCP hole punch works only if each side's SYN leaves from the port it
 * told the other: its NAT keeps that port (a cone-like NAT maps a local port to the same public one whatever the
 * destination), and the peer's SYN to it then matches the mapping the first SYN opened. libp2p's TCP transport dials
 * from a fresh ephemeral port, so a hole punch registers `target address → local port` here for the one dial it makes
 * (HolePunch.ts); every other dial is left as it is. @libp2p/tcp hands the dial options to `net.connect`, which binds
 * `localPort` before connecting.
 */
import type { DialTransportOptions, Transport } from "@libp2p/interface"
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

/** The local port each registered target is dialled from. A libp2p service of nodes, so the host's owner reaches it. */
export class DialPorts {
  readonly [Symbol.toStringTag] = "@mesh/dial-ports"
  private readonly ports = new Map<string, number>()

  /** Dials to `target` leave from `localPort` until the returned function is called. */
  bind(target: Multiaddr, localPort: number): () => void {
    const key = endpointOf(target)
    if (key === undefined) return () => {}
    this.ports.set(key, localPort)
    return () => {
      if (this.ports.get(key) === localPort) this.ports.delete(key)
    }
  }

  portFor(target: Multiaddr): number | undefined {
    const key = endpointOf(target)
    return key === undefined ? undefined : this.ports.get(key)
  }
}

/** Wraps a TCP transport factory: a dial to a registered target leaves from its registered local port. */
export const fromPorts =
  (ports: DialPorts) =>
  <C>(factory: (components: C) => Transport) =>
  (components: C): Transport => {
    const transport = factory(components)
    const dial = transport.dial.bind(transport)
    transport.dial = (address: Multiaddr, options: DialTransportOptions) => {
      const localPort = ports.portFor(address)
      return dial(address, localPort === undefined ? options : ({ ...options, localPort } as DialTransportOptions))
    }
    return transport
  }

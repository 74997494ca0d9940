/**
 * Where libp2p asks us whether a peer may do something: the connection gater (banned peers never connect, only
 * authenticated peers reserve relay slots or are relayed) and the guard on stream handlers (only authenticated peers
 * reach the DHT, gossip or any protocol registered later).
 *
 * The guard wraps handlers in the registrar rather than using `libp2p.use` middleware: in libp2p 3.3 the inbound path
 * appends the handler to the registered middleware array itself (connection.js `onIncomingStream`), so every stream
 * would add one more handler call (fixed upstream by js-libp2p PR #3534, which 3.3.11 does not have).
 */

import { RELAY_V2_HOP_CODEC, RELAY_V2_STOP_CODEC } from "@libp2p/circuit-relay-v2"
import type {
  Connection,
  ConnectionGater,
  Libp2pEvents,
  PeerId,
  Stream,
  StreamHandler,
  StreamHandlerOptions,
  StreamHandlerRecord,
  TypedEventTarget,
} from "@libp2p/interface"
import { PING_PROTOCOL } from "@libp2p/ping"
import type { Multiaddr } from "@multiformats/multiaddr"
import * as AuthProtocol from "./AuthProtocol.js"

/**
 * Protocols an unauthenticated peer may use: the handshake itself, ping (libp2p's connection monitor pings every
 * connection, and a ping reveals nothing), and the relay protocols, which the gater checks per request. Identify is
 * not among them: our listen addresses and protocols are for authenticated peers.
 */
export const OPEN_PROTOCOLS: ReadonlySet<string> = new Set([
  AuthProtocol.PROTOCOL,
  PING_PROTOCOL,
  RELAY_V2_HOP_CODEC,
  RELAY_V2_STOP_CODEC,
])

export interface GaterChecks {
  readonly isBanned: (peerId: string) => boolean | Promise<boolean>
  readonly isAuthenticated: (peerId: string) => boolean
  /** Waits (bounded) for the peer's handshake outcome. */
  readonly awaitAuthenticated: (peerId: string) => Promise<boolean>
}

export const connectionGater = (checks: GaterChecks): ConnectionGater => {
  const banned = (peer: PeerId) => checks.isBanned(peer.toString())
  const notAuthenticated = async (peer: PeerId) => !(await checks.awaitAuthenticated(peer.toString()))
  return {
    denyDialPeer: banned,
    denyInboundEncryptedConnection: banned,
    denyOutboundEncryptedConnection: banned,
    // The reservation request usually races the handshake on a fresh connection, hence the wait.
    denyInboundRelayReservation: notAuthenticated,
    // Both ends of a relayed connection must be authenticated with us, the relay.
    denyOutboundRelayedConnection: async (source, destination) =>
      !checks.isAuthenticated(destination.toString()) || (await notAuthenticated(source)),
    // We accept relayed connections only through a relay we authenticated, from a peer that is not banned; the
    // peer itself then authenticates over the relayed connection.
    denyInboundRelayedConnection: async (relay, remote) =>
      (await checks.isBanned(remote.toString())) || (await notAuthenticated(relay)),
  }
}

/** What the guard needs from libp2p's registrar (an internal component, reached through our service below). */
export interface HandlerRegistrar {
  getProtocols(): Array<string>
  getHandler(protocol: string): StreamHandlerRecord
  handle(protocol: string, handler: StreamHandler, options?: StreamHandlerOptions): Promise<void>
}

export interface StreamGuard {
  readonly isAuthenticated: (peerId: string) => boolean
  readonly awaitAuthenticated: (peerId: string) => Promise<boolean>
  /** Whether an authenticated peer may open a stream for the protocol (gossip runs only on router links). */
  readonly permits: (peerId: string, protocol: string) => boolean
}

const NOT_AUTHENTICATED = "peer is not authenticated"

const NOT_PERMITTED = "protocol not offered to this peer"

/**
 * Wraps one handler: an authenticated peer goes straight through (if the protocol is permitted to it), others wait
 * for their handshake or are cut off.
 */
const guarded = (guard: StreamGuard, protocol: string, handler: StreamHandler): StreamHandler => {
  const pass = (stream: Stream, connection: Connection, peer: string) => {
    if (guard.permits(peer, protocol)) return handler(stream, connection)
    stream.abort(new Error(NOT_PERMITTED))
  }
  return (stream: Stream, connection: Connection) => {
    const peer = connection.remotePeer.toString()
    if (guard.isAuthenticated(peer)) return pass(stream, connection, peer)
    return guard.awaitAuthenticated(peer).then((ok) => {
      if (ok) return pass(stream, connection, peer)
      stream.abort(new Error(NOT_AUTHENTICATED))
    })
  }
}

/**
 * The libp2p service that gives the host what libp2p keeps internal: it guards every stream handler after all
 * services registered theirs, re-guards any handler registered or replaced later (kad-dht re-registers on a mode
 * change, applications register after start), and lets the host listen on more addresses after start.
 */
export class GateService {
  readonly [Symbol.toStringTag] = "@mesh/gate"
  private readonly wrappers = new WeakSet<StreamHandler>()

  constructor(
    private readonly components: {
      readonly registrar: HandlerRegistrar
      readonly events: TypedEventTarget<Libp2pEvents>
      readonly transportManager: { listen(addrs: Array<Multiaddr>): Promise<void> }
    },
    private readonly guard: StreamGuard,
  ) {}

  /** libp2p starts only components that have both `start` and `stop`. */
  start(): void {}

  afterStart(): void {
    this.guardAll()
    // The registrar records every (re-)registration in our own peer record, which emits this event.
    this.components.events.addEventListener("self:peer:update", this.guardAll)
  }

  stop(): void {
    this.components.events.removeEventListener("self:peer:update", this.guardAll)
  }

  listen(addresses: Array<Multiaddr>): Promise<void> {
    return this.components.transportManager.listen(addresses)
  }

  /** Synchronous up to each `handle` call, which replaces the handler before its first await. */
  private readonly guardAll = (): void => {
    const registrar = this.components.registrar
    for (const protocol of registrar.getProtocols()) {
      if (OPEN_PROTOCOLS.has(protocol)) continue
      let record: StreamHandlerRecord
      try {
        record = registrar.getHandler(protocol)
      } catch {
        continue
      }
      if (this.wrappers.has(record.handler)) continue
      const wrapper = guarded(this.guard, protocol, record.handler)
      this.wrappers.add(wrapper)
      void registrar.handle(protocol, wrapper, { ...record.options, force: true }).catch(() => undefined)
    }
  }
}

export const gateService =
  (guard: StreamGuard) =>
  (components: ConstructorParameters<typeof GateService>[0]): GateService =>
    new GateService(components, guard)

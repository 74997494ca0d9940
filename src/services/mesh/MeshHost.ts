/**
 * The mesh host: a libp2p peer keyed by the peer's Ed25519 key, on which every connection runs the
 * `/mesh/auth/1.0.0` handshake. Only peers whose control-plane credential verified get relay reservations, DHT answers
 * and gossip; everyone else is refused and disconnected.
 */
import type { Connection, Stream as Libp2pStream } from "@libp2p/interface"
import { Context, Data, type Effect, type Option, type Stream } from "effect"
import type { MeshLibp2p } from "../../p2p/Libp2pHost.js"
import type { AuthenticatedPeer, ConnectedPeer, MeshTrust } from "../../p2p/Trust.js"

export interface MeshHostService {
  readonly peerId: string
  /** The raw host, for router/node features built on top. */
  readonly libp2p: MeshLibp2p
  /** Listen multiaddrs, each ending in /p2p/<peerId>. */
  readonly addresses: Effect.Effect<ReadonlyArray<string>>
  /** Connected and authenticated peers. */
  readonly peers: Effect.Effect<ReadonlyArray<ConnectedPeer>>
  /** The peer as last verified; none when it is not authenticated or its credential has expired since. */
  readonly peer: (peerId: string) => Effect.Effect<Option.Option<AuthenticatedPeer>>
  /** The peer's open connections that passed the handshake, direct ones first. */
  readonly connections: (peerId: string) => Effect.Effect<ReadonlyArray<Connection>>
  /** Completes at the next change of who is connected or authenticated; watchers re-read `peers` then. */
  readonly nextChange: Effect.Effect<void>
  /** Dials and authenticates; fails if the remote refuses us or presents no valid credential (or lacks `requireRole`). */
  readonly dial: (
    address: string,
    options?: { readonly requireRole?: string },
  ) => Effect.Effect<AuthenticatedPeer, MeshDialError>
  /**
   * The peer, authenticated: over a connection already open, else dialed by its id (first at the addresses this host
   * knows for it, then through the relay of each connected router) and handshaken. Banned peers are refused.
   */
  readonly connect: (peerId: string) => Effect.Effect<AuthenticatedPeer, MeshDialError>
  /**
   * A direct connection to a peer this host reaches only through a relay: its own addresses (peer store: identify, the
   * DHT) dialled as the direct attempts of the dial plan, no relay. Succeeds at once when a direct connection is open;
   * fails when the peer has no known address or none answered (each failure kept for `lastDirectFailure`).
   */
  readonly upgrade: (peerId: string) => Effect.Effect<void, MeshDialError>
  /** Why the last direct dial to the peer failed, until one succeeds (for /debug/connectivity: why a path is relayed). */
  readonly lastDirectFailure: (peerId: string) => Effect.Effect<Option.Option<string>>
  /**
   * A new stream for `protocol` on an authenticated connection to the peer, connecting first when there is none.
   * Direct connections are preferred; relayed (limited) ones are used when nothing else is open. `optimistic`: the
   * stream is returned at once, its protocol unconfirmed (`proposed` names it, for a StreamSocket to send the proposal
   * with its first bytes and check the echo): those bytes travel with the proposal instead of a round trip after it.
   */
  readonly openStream: (
    peerId: string,
    protocol: string,
    options?: { readonly optimistic?: boolean },
  ) => Effect.Effect<
    { readonly stream: Libp2pStream; readonly connection: Connection; readonly proposed?: string },
    MeshDialError
  >
  /**
   * Listens on one more address after start; on a node, `<router address>/p2p-circuit` reserves a slot on that
   * router's relay. Fails when the relay refuses the reservation (it does until we are authenticated there).
   */
  readonly listen: (address: string) => Effect.Effect<void, MeshListenError>
  /** Closes every connection to the peer now (used on ban). */
  readonly disconnect: (peerId: string) => Effect.Effect<void>
  /** Re-checks every authenticated peer against the current trust and clock; drops those that fail (ban, retired key, expiry). */
  readonly reverify: Effect.Effect<void>
  /** Shows every authenticated peer our current credential again (after it changed) and records theirs. */
  readonly reauthenticate: Effect.Effect<void>
  readonly publish: (topic: string, data: Uint8Array) => Effect.Effect<void>
  /** Messages on a gossip topic from authenticated peers, as a Stream. */
  readonly subscribe: (topic: string) => Stream.Stream<{ readonly from: string; readonly data: Uint8Array }>
}

export class MeshHost extends Context.Tag("mesh/MeshHost")<MeshHost, MeshHostService>() {}

export interface MeshHostOptions {
  /** This peer's 32-byte Ed25519 private seed (PeerKey.generate().seed). */
  readonly seed: Uint8Array
  /** Our current credential (it changes on refresh). */
  readonly credential: Effect.Effect<Uint8Array>
  /** Emits when `credential` changed: the host then re-authenticates its connections with the new one. */
  readonly credentialChanges?: Stream.Stream<void>
  readonly trust: Effect.Effect<MeshTrust>
  /** e.g. ["/ip4/127.0.0.1/tcp/0"] */
  readonly listen: ReadonlyArray<string>
  readonly announce?: ReadonlyArray<string>
  /** router: circuit-relay server, DHT server, gossip hub. node: relay client, DHT client. */
  readonly mode: "router" | "node"
}

/** libp2p could not be created or started (bad key, address in use, refused relay listen at start). */
export class MeshStartError extends Data.TaggedError("MeshStartError")<{ readonly reason: string }> {
  override get message(): string {
    return `mesh host did not start: ${this.reason}`
  }
}

/** A dial that did not end with an authenticated peer. `reason` never holds a credential. */
export class MeshDialError extends Data.TaggedError("MeshDialError")<{
  readonly address: string
  readonly reason: string
}> {
  override get message(): string {
    return `dial ${this.address} failed: ${this.reason}`
  }
}

export class MeshListenError extends Data.TaggedError("MeshListenError")<{
  readonly address: string
  readonly reason: string
}> {
  override get message(): string {
    return `listen on ${this.address} failed: ${this.reason}`
  }
}

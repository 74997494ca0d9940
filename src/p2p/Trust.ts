/**
 * What the handshake checks a peer against and what it learns of one. They sit below the MeshHost service, whose
 * interface speaks in them, so the protocol pieces in p2p/ never import a service.
 */
import type { Identity } from "../crypto/Biscuit.js"

/** What the host trusts right now; its owner (router or node) keeps it fresh from /keys, /info and mesh events. */
export interface MeshTrust {
  /** Raw 32-byte Ed25519 public key of a live control-plane signing key id, or undefined. */
  readonly keyFor: (keyId: number) => Uint8Array | undefined
  readonly isBanned: (peerId: string) => boolean
}

/** A peer that passed the handshake: the facts its credential attests, as last verified. */
export interface AuthenticatedPeer {
  readonly peerId: string
  readonly role: string
  readonly labels: Readonly<Record<string, string>>
  /** The OIDC identity behind the peer, for enrollments that had one. */
  readonly identity?: Identity
  readonly expiresAtMs: number
  readonly keyId: number
  readonly credential: Uint8Array
  readonly verifiedAtMs: number
}

/**
 * An authenticated peer as the host lists it. `session` is new each time the peer becomes authenticated after a time
 * with no authenticated connection (a reconnect, a restart on its side), and stays the same through re-authentication
 * on a connection it has: a watcher that compares sessions sees every reconnect, even one that happened between two
 * of its looks.
 */
export interface ConnectedPeer extends AuthenticatedPeer {
  readonly session: number
}

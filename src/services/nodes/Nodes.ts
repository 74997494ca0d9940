/**
 * The node records: who is enrolled, with which key, role and labels, and which credential is current. A record is
 * never written whole over an existing one: each flow changes only the fields it owns, under a condition the write
 * itself checks, so a ban committed meanwhile is never undone. Only unbanning clears `banned`.
 */
import { Context, Effect, Option } from "effect"
import { Conflict, Forbidden } from "../../domain/Errors.js"
import type { Node } from "../../domain/Node.js"

export interface CredentialRotation {
  readonly peerId: string
  /** Digest of the credential being replaced; the swap happens only if it is still the current one. */
  readonly previousDigest: Uint8Array
  readonly digest: Uint8Array
  readonly expiresAt: number
  readonly now: number
}

/** A new current credential for an admitted bootstrap node (re-enrollment, collection of an approval). */
export interface Reissue {
  readonly peerId: string
  /** The role the credential carries; the write fails if the record holds another. */
  readonly role: string
  readonly digest: Uint8Array
  readonly expiresAt: number
  readonly now: number
}

export interface NodesService {
  readonly find: (peerId: string) => Effect.Effect<Option.Option<Node>>
  /** Nodes, optionally only those owned by one user (identity key). */
  readonly list: (filter?: { readonly ownerId?: string }) => Effect.Effect<ReadonlyArray<Node>>
  /** Creates the record; false when the peer already has one, which is left as it is. */
  readonly create: (node: Node) => Effect.Effect<boolean>
  /**
   * Makes a new credential current for a bootstrap node that is not banned and holds `role`; false otherwise (banned
   * meanwhile, gone, or enrolled another way).
   */
  readonly reissue: (reissue: Reissue) => Effect.Effect<boolean>
  /**
   * An OIDC node registering again under the same identity: its role, labels, identity facts, session and credential
   * are replaced; false when it is banned or no longer this identity's node.
   */
  readonly reregister: (node: Node) => Effect.Effect<boolean>
  /** Sets the node's autonomous-recovery flag; false when there is no such node. */
  readonly setAutonomousRecovery: (peerId: string, enabled: boolean) => Effect.Effect<boolean>
  /** How many nodes there are, by any state. */
  readonly count: Effect.Effect<number>
  /**
   * Atomically replaces the current credential; false when it was already replaced (a replay or a race) or the node
   * was banned meanwhile.
   */
  readonly rotateCredential: (rotation: CredentialRotation) => Effect.Effect<boolean>
}

export class Nodes extends Context.Tag("mesh/Nodes")<Nodes, NodesService>() {}

export const CHANGED = "the node record changed meanwhile; try again"

/**
 * Why a conditional write of a node changed nothing: it was banned after the caller read it (403, like a ban seen
 * earlier), or changed or vanished otherwise (409: the caller may try again).
 */
export const lostWrite = (nodes: NodesService, peerId: string): Effect.Effect<never, Forbidden | Conflict> =>
  Effect.flatMap(nodes.find(peerId), (node) =>
    Option.isSome(node) && node.value.banned
      ? Effect.fail<Forbidden | Conflict>(new Forbidden({ message: "node is banned" }))
      : Effect.fail(new Conflict({ message: CHANGED })),
  )

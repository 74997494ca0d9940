/** The node records: who is enrolled, with which key, role and labels, and which credential is current. */
import { Context, type Effect, type Option } from "effect"
import type { Node } from "../../domain/Node.js"

export interface CredentialRotation {
  readonly peerId: string
  /** Digest of the credential being replaced; the swap happens only if it is still the current one. */
  readonly previousDigest: Uint8Array
  readonly digest: Uint8Array
  readonly expiresAt: number
  readonly now: number
}

export interface NodesService {
  readonly find: (peerId: string) => Effect.Effect<Option.Option<Node>>
  /** Nodes, optionally only those owned by one user (identity key). */
  readonly list: (filter?: { readonly ownerId?: string }) => Effect.Effect<ReadonlyArray<Node>>
  /** Creates the record, or replaces it when the peer enrolls again. */
  readonly save: (node: Node) => Effect.Effect<void>
  /** Sets the node's autonomous-recovery flag; false when there is no such node. */
  readonly setAutonomousRecovery: (peerId: string, enabled: boolean) => Effect.Effect<boolean>
  /** How many nodes there are, by any state. */
  readonly count: Effect.Effect<number>
  /** Atomically replaces the current credential; false when it was already replaced (a replay or a race). */
  readonly rotateCredential: (rotation: CredentialRotation) => Effect.Effect<boolean>
}

export class Nodes extends Context.Tag("mesh/Nodes")<Nodes, NodesService>() {}

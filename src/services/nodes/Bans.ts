/**
 * Bans: on a node, and for an OIDC enrollment on the identity behind it too, so that a new keypair for the same
 * person is refused as well. Unbanning lifts both.
 */
import { Context, type Effect } from "effect"
import type { NotFound } from "../../domain/Errors.js"
import type { Actor } from "../operations/Audit.js"

export interface BanOutcome {
  readonly peerId: string
  /** The identity banned or unbanned along with the node, for OIDC enrollments. */
  readonly identityKey: string | undefined
  /** False when the node was already in that state. */
  readonly changed: boolean
}

export interface BansService {
  /** Bans the node and its identity, records it in the audit log and announces it to the mesh. */
  readonly ban: (peerId: string, actor: Actor) => Effect.Effect<BanOutcome, NotFound>
  readonly unban: (peerId: string, actor: Actor) => Effect.Effect<BanOutcome, NotFound>
  readonly isIdentityBanned: (identityKey: string) => Effect.Effect<boolean>
  /** Every banned peer id, for /info. */
  readonly bannedPeerIds: Effect.Effect<ReadonlyArray<string>>
}

export class Bans extends Context.Tag("mesh/Bans")<Bans, BansService>() {}

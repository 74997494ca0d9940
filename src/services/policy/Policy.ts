/** The mesh policy as stored: one document, replaced as a whole, with a version that counts replacements. */
import { Context, type Effect } from "effect"
import type { BadRequest } from "../../domain/Errors.js"
import type { Document } from "../../domain/Policy.js"
import type { Actor } from "../operations/Audit.js"

export interface PolicySnapshot {
  readonly document: Document
  /** 0 before any policy was posted. */
  readonly version: number
  readonly updatedAt: number | undefined
}

export interface PolicyService {
  /** The policy in force; read from the database so every replica sees a change at once. */
  readonly current: Effect.Effect<PolicySnapshot>
  /** Validates and stores a new policy; an invalid one is refused and the old one stays. */
  readonly replace: (document: Document, actor: Actor) => Effect.Effect<PolicySnapshot, BadRequest>
  /**
   * Replaces the policy with `change` of the one in force, read and written in one transaction (the row locked on
   * postgres), so a concurrent edit is not lost; validated, audited and announced as `replace` is. `change` runs in
   * that transaction: what it writes commits with the policy or not at all.
   */
  readonly amend: <E, R>(
    change: (current: Document) => Effect.Effect<Document, E, R>,
    actor: Actor,
  ) => Effect.Effect<PolicySnapshot, BadRequest | E, R>
}

export class Policy extends Context.Tag("mesh/Policy")<Policy, PolicyService>() {}

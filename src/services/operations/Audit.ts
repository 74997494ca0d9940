/**
 * The audit log: every action that changes who may do what (tokens, approvals, bans, policy, recovery flags) is
 * appended with its actor, subject and time. Operators page through it newest first.
 */
import { Context, type Effect } from "effect"

export const ACTIONS = [
  "token.minted",
  "token.revoked",
  "enrollment.approved",
  "enrollment.rejected",
  "node.banned",
  "node.unbanned",
  "node.autonomous_recovery",
  "policy.replaced",
  "tool_drift.approved",
  "tool_drift.dismissed",
] as const

export type Action = (typeof ACTIONS)[number]

/** `operator` (admin token), `cli` (the admin command), `user:<issuer>|<subject>`, or `auto-approve`. */
export type Actor = string

export const OPERATOR: Actor = "operator"
export const CLI: Actor = "cli"
export const userActor = (userId: string): Actor => `user:${userId}`

export interface AuditEntry {
  readonly id: number
  readonly at: number
  readonly actor: Actor
  readonly action: Action
  readonly subject: string
  readonly details: Readonly<Record<string, unknown>>
}

export interface AuditPage {
  readonly entries: ReadonlyArray<AuditEntry>
  /** Pass as `before` to get the next (older) page; undefined at the end. */
  readonly next: number | undefined
}

export interface AuditService {
  /** Appends an entry; inside a transaction it commits or rolls back with the action. */
  readonly record: (entry: {
    readonly actor: Actor
    readonly action: Action
    readonly subject: string
    readonly details?: Readonly<Record<string, unknown>>
  }) => Effect.Effect<void>
  /** Newest first; `actor` and `action`, when given, keep only the entries with exactly that actor or action. */
  readonly page: (options: {
    readonly before?: number
    readonly limit: number
    readonly actor?: Actor
    readonly action?: Action
  }) => Effect.Effect<AuditPage>
}

export class Audit extends Context.Tag("mesh/Audit")<Audit, AuditService>() {}

/** What every page is given: the API client, who is signed in, and the shell's hooks. */
import type { Client, Success } from "./api.js"

export type UserStatus = Success<"user", "status">
export type AdminStatus = Success<"adminStatus", "status">

export type Session =
  | { readonly kind: "admin" }
  | { readonly kind: "user"; readonly user: UserStatus["user"]; readonly expiresAt: number }

export interface PageContext {
  readonly client: Client
  readonly session: Session
  /** The count on the Approvals tab. */
  readonly setPending: (count: number) => void
  /** Back to the sign-in screen with a message (a user who banned their own identity). */
  readonly endSession: (message: string) => void
}

export type PageId = "overview" | "approvals" | "tokens" | "nodes" | "policy" | "drift" | "audit"

export interface PageDefinition {
  readonly id: PageId
  readonly title: string
  readonly render: (root: HTMLElement, context: PageContext) => void
}

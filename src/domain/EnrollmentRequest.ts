/** A bootstrap enrollment waiting for (or resolved by) an operator. Resolved exactly once. */
export type Status = "pending" | "approved" | "rejected"

export interface EnrollmentRequest {
  readonly id: string
  readonly peerId: string
  /** Raw 32-byte Ed25519 public key; later challenges of the enrollee verify under it. */
  readonly publicKey: Uint8Array
  readonly requestedRole: string
  readonly labels: Readonly<Record<string, string>>
  readonly tokenId: string
  readonly status: Status
  readonly createdAt: number
  readonly resolvedAt: number | undefined
  /** `operator`, `auto-approve`, or the user who resolved it. */
  readonly resolvedBy: string | undefined
  /** When the approval's credential was handed to the enrollee; it is handed over once. */
  readonly releasedAt: number | undefined
}

/** How often an enrollee in the queue should poll, in seconds. */
export const POLL_INTERVAL_SECONDS = 30

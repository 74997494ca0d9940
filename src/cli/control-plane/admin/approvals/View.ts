/** An enrollment request as the admin API shows it, and how the commands print one. */
import * as Output from "../Output.js"

export interface RequestView {
  readonly id: string
  readonly peer_id: string
  readonly requested_role: string
  readonly labels: Readonly<Record<string, string>>
  readonly status: string
  readonly created_at: string
}

export const describe = (r: RequestView): string =>
  `${r.id}: ${r.status}; peer ${r.peer_id}, role ${r.requested_role}, labels ${Output.labels(r.labels)}`

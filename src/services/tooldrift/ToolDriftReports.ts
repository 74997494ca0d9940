/**
 * The control plane's tool drift reports: what nodes report of changed tool definitions (`POST /nodes/tool-drift`),
 * kept for the operator, who approves the new definition (a pin in the policy) or dismisses the report. Banning the
 * provider is the ban API's, not this service's.
 */
import { Context, type Effect } from "effect"
import type { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, Unauthorized } from "../../domain/Errors.js"
import type { Against, Report } from "../../domain/ToolDrift.js"
import type { Actor } from "../operations/Audit.js"

export type Status = "open" | "approved" | "dismissed"

export interface StoredReport {
  readonly id: string
  /** The node that reported it first. */
  readonly reporterPeerId: string
  readonly providerPeerId: string
  /** As the reporting node says the provider's credential attested them. */
  readonly providerLabels: Readonly<Record<string, string>>
  readonly tool: string
  readonly against: Against
  readonly oldFingerprint: string
  readonly oldDefinition: string | undefined
  readonly newFingerprint: string
  readonly newDefinition: string | undefined
  readonly status: Status
  /** How many reports (from any node) this one stands for. */
  readonly reports: number
  readonly firstReportedAt: number
  readonly lastReportedAt: number
  readonly resolvedAt: number | undefined
  readonly resolvedBy: string | undefined
  /** For an approval: the labels the pin was limited to (empty for every provider). */
  readonly approvedFor: Readonly<Record<string, string>> | undefined
}

/** The reporting node's signature of `mesh:nodes-tool-drift:<peer_id>:<unix-millis>:<body digest>`. */
export interface ReportProof {
  readonly unixMs: number
  readonly signature: Uint8Array
  /** Lower-case hex sha256 of the request body, which the signature covers. */
  readonly bodyDigest: string
}

export interface Approval {
  readonly report: StoredReport
  /** The policy version that carries the pin. */
  readonly policyVersion: number
}

export interface ToolDriftReportsService {
  /**
   * Stores a report of the node whose credential is presented and whose key signed it; one per (provider, tool, new
   * fingerprint), whoever reports it again.
   */
  readonly report: (
    credential: Uint8Array,
    proof: ReportProof,
    report: Report,
  ) => Effect.Effect<void, BadRequest | Unauthorized | Forbidden | PayloadTooLarge | Conflict>
  /** Newest first, at most `LIST_LIMIT`. */
  readonly list: (status: Status | "all") => Effect.Effect<ReadonlyArray<StoredReport>>
  /**
   * Pins the report's new definition in the policy (for every provider, or only providers with the provider's labels
   * as its node record holds them) and closes the report, in one transaction.
   */
  readonly approve: (
    id: string,
    options: { readonly forProviderLabels: boolean },
    actor: Actor,
  ) => Effect.Effect<Approval, NotFound | Conflict | BadRequest>
  readonly dismiss: (id: string, actor: Actor) => Effect.Effect<StoredReport, NotFound | Conflict>
}

export class ToolDriftReports extends Context.Tag("mesh/ToolDriftReports")<
  ToolDriftReports,
  ToolDriftReportsService
>() {}

/** Open reports one node may have waiting; past it, its new reports are refused until an operator resolves some. */
export const MAX_OPEN_PER_NODE = 100
export const LIST_LIMIT = 500

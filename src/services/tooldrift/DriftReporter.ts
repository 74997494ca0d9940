/**
 * The node's side of tool drift: it keeps the definitions it holds tools against (so a report can show what changed)
 * and reports each drift ToolPinning notices to the control plane, in the background. Nothing waits on the control
 * plane: a report is queued or, past the queue's cap, dropped and counted.
 */
import { Context, type Effect } from "effect"
import type { Against } from "../../domain/ToolDrift.js"

export interface Drift {
  readonly providerPeerId: string
  readonly providerLabels: Readonly<Record<string, string>>
  /** `mcp://<service>/<tool>`. */
  readonly tool: string
  readonly against: Against
  /** The fingerprints the definition should have had. */
  readonly expected: ReadonlyArray<string>
  readonly fingerprint: string
  /** The definition as the provider listed it (before hidden text is removed). */
  readonly definition: Readonly<Record<string, unknown>>
}

export interface DriftReporterService {
  /** Keeps a definition the node holds `tool` against (pinned or its first-use pin), for later reports' diffs. */
  readonly remember: (
    tool: string,
    fingerprint: string,
    definition: Readonly<Record<string, unknown>>,
  ) => Effect.Effect<void>
  /** Queues a report of `drift`; returns at once. */
  readonly report: (drift: Drift) => Effect.Effect<void>
}

export class DriftReporter extends Context.Tag("mesh/DriftReporter")<DriftReporter, DriftReporterService>() {}

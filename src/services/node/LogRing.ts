/**
 * The node's most recent log lines, kept in memory for `GET /debug/logs`: an operator can see why a node is not
 * connecting without shell access to its log files. Lines pass through the redactor before they are kept.
 */
import { Context, type Effect } from "effect"

export interface LogRingService {
  /** The newest lines, oldest first; at most `limit`. */
  readonly recent: (limit: number) => Effect.Effect<ReadonlyArray<string>>
}

export class LogRing extends Context.Tag("mesh/LogRing")<LogRing, LogRingService>() {}

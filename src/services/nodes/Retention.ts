/**
 * Retention: node records whose session ended more than `--node-retention` ago are deleted; banned nodes are kept
 * forever; retention 0 keeps everything. A bootstrap node's session ends when its last credential expires (it may
 * refresh until its record is deleted).
 */
import { Context, type Effect } from "effect"

export interface RetentionService {
  /** Deletes expired records in batches; returns how many were deleted. */
  readonly sweep: Effect.Effect<number>
}

export class Retention extends Context.Tag("mesh/Retention")<Retention, RetentionService>() {}

/** Rows deleted per statement, so a sweep of many records never holds the database for long. */
export const BATCH = 1000

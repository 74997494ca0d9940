/** Whether the database answers right now: the basis of /readyz and of the 503 on routes that need it. */
import { Context, type Effect } from "effect"

export interface DatabaseHealthService {
  /** True when a trivial query completes within the probe timeout. */
  readonly check: Effect.Effect<boolean>
}

export class DatabaseHealth extends Context.Tag("mesh/DatabaseHealth")<DatabaseHealth, DatabaseHealthService>() {}

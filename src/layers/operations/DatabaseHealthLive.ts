/** DatabaseHealth over the SqlClient: a `SELECT 1` bounded by a short timeout. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Layer } from "effect"
import { DatabaseHealth } from "../../services/operations/DatabaseHealth.js"

const PROBE_TIMEOUT = Duration.seconds(2)

export const layer = Layer.effect(
  DatabaseHealth,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      check: sql`SELECT 1`.pipe(
        Effect.timeout(PROBE_TIMEOUT),
        Effect.as(true),
        Effect.catchAllCause((cause) => Effect.as(Effect.logDebug("database probe failed", cause), false)),
      ),
    }
  }),
)

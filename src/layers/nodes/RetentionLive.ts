/**
 * Retention over SQL, with an hourly sweep (and one at start) as a fiber of the layer's scope. The sweep also forgets
 * spent enrollment challenges whose window has passed.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { BATCH, Retention } from "../../services/nodes/Retention.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { toBool } from "../sql/Columns.js"

const SWEEP_EVERY = Duration.hours(1)

export const layer = Layer.scoped(
  Retention,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ControlPlaneConfig
    const metrics = yield* Metrics
    const challenges = yield* Challenges
    const deleted = metrics.counter("mesh_control_plane_nodes_deleted_total", "Node records deleted by retention.")
    const retention = Duration.toMillis(config.nodeRetention)

    const batch = (cutoff: number) =>
      sql<{ peer_id: string }>`DELETE FROM nodes WHERE peer_id IN (
          SELECT peer_id FROM nodes
          WHERE banned = ${toBool(false)} AND (
            (session_expires_at IS NOT NULL AND session_expires_at < ${cutoff})
            OR (session_expires_at IS NULL
              AND CASE WHEN credential_expires_at > 0 THEN credential_expires_at ELSE enrolled_at END < ${cutoff}))
          LIMIT ${BATCH})
        RETURNING peer_id`.pipe(Effect.orDie)

    const sweep = Effect.gen(function* () {
      yield* challenges.prune
      if (retention <= 0) return 0
      const cutoff = (yield* Clock.currentTimeMillis) - retention
      let total = 0
      for (;;) {
        const gone = yield* batch(cutoff)
        total += gone.length
        if (gone.length < BATCH) break
        // Let requests in between batches.
        yield* Effect.yieldNow()
      }
      if (total > 0) {
        deleted.inc({}, total)
        yield* Effect.logInfo("expired node records deleted").pipe(Effect.annotateLogs({ count: total }))
      }
      return total
    }).pipe(Effect.withSpan("Retention.sweep"))
    yield* sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("retention sweep failed; will retry", cause)),
      Effect.repeat(Schedule.spaced(SWEEP_EVERY)),
      Effect.forkScoped,
    )
    return { sweep }
  }),
)

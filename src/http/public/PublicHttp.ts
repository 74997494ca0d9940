/** Handlers of the public group. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Unavailable } from "../../domain/Errors.js"
import { DatabaseHealth } from "../../services/DatabaseHealth.js"
import { Metrics } from "../../services/Metrics.js"
import { ControlPlaneApi } from "../Api.js"

export const PublicHttpLive = HttpApiBuilder.group(ControlPlaneApi, "public", (handlers) =>
  Effect.gen(function* () {
    const database = yield* DatabaseHealth
    const metrics = yield* Metrics
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        Effect.flatMap(database.check, (reachable) =>
          reachable
            ? Effect.succeed({ status: "ready" as const })
            : new Unavailable({ message: "database unavailable" }),
        ),
      )
      .handle("metrics", () => Effect.sync(() => metrics.render()))
  }),
)

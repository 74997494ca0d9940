/**
 * Local API requests being served now, as `mesh_node_http_requests_in_flight`: one count per node, shared by the
 * middleware and the proxy front, which answer requests of the same API.
 */
import { Effect, Ref } from "effect"
import { Metrics } from "../services/operations/Metrics.js"

export interface InFlight {
  readonly enter: Effect.Effect<void>
  readonly leave: Effect.Effect<void>
}

export const make: Effect.Effect<InFlight, never, Metrics> = Effect.gen(function* () {
  const gauge = (yield* Metrics).gauge("mesh_node_http_requests_in_flight", "Local API requests being served now.")
  const active = yield* Ref.make(0)
  const move = (by: number) =>
    Effect.flatMap(
      Ref.updateAndGet(active, (n) => n + by),
      (n) => Effect.sync(() => gauge.set({}, n)),
    )
  return { enter: move(1), leave: move(-1) }
})

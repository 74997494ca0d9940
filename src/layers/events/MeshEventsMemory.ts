/**
 * MeshEvents that are recorded and logged but not sent anywhere: for a control plane without routers to reach, and
 * for tests that assert what would have been announced.
 */
import { Effect, Layer, Ref } from "effect"
import { type MeshEvent, MeshEvents } from "../../services/events/MeshEvents.js"

const KEEP = 256

export const make = Effect.gen(function* () {
  const events = yield* Ref.make<ReadonlyArray<MeshEvent>>([])
  return {
    publish: (event: MeshEvent) =>
      Ref.update(events, (all) => [...all.slice(-(KEEP - 1)), event]).pipe(
        Effect.zipRight(Effect.logDebug("mesh event").pipe(Effect.annotateLogs({ type: event.type }))),
      ),
    recent: Ref.get(events),
  }
})

export const layer = Layer.effect(MeshEvents, make)

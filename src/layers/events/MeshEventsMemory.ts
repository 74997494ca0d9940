/**
 * MeshEvents that are recorded and logged but not sent anywhere: for a control plane without routers to reach, and
 * for tests that assert what would have been announced.
 *
 * An event no newer than the last this process published about the same subject is not published again: the same
 * ban may be announced both by the request that made it and by the watch on the database (BanAnnouncer), and
 * receivers would drop the second anyway.
 */
import { Effect, Layer, Ref } from "effect"
import * as MeshEventCodec from "../../domain/MeshEventCodec.js"
import { type MeshEvent, MeshEvents } from "../../services/events/MeshEvents.js"

const KEEP = 256

export const make = Effect.gen(function* () {
  const events = yield* Ref.make<ReadonlyArray<MeshEvent>>([])
  const latest = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
  /** Records the event; false when it is not newer than one already published, and then nothing is recorded. */
  const publish = (event: MeshEvent): Effect.Effect<boolean> =>
    Ref.modify(latest, (seen) =>
      MeshEventCodec.isNewer(seen, event)
        ? [true, new Map(seen).set(MeshEventCodec.subjectOf(event), event.sequence)]
        : [false, seen],
    ).pipe(
      Effect.tap((fresh) =>
        fresh
          ? Ref.update(events, (all) => [...all.slice(-(KEEP - 1)), event]).pipe(
              Effect.zipRight(Effect.logDebug("mesh event").pipe(Effect.annotateLogs({ type: event.type }))),
            )
          : Effect.void,
      ),
    )
  return { publish, recent: Ref.get(events) }
})

export const layer = Layer.effect(
  MeshEvents,
  Effect.map(make, (memory) => ({
    publish: (event: MeshEvent) => Effect.asVoid(memory.publish(event)),
    recent: memory.recent,
  })),
)

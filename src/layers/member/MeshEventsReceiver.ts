/**
 * Signed mesh events reaching a router or node: checked against the trusted control-plane keys and our clock, then
 * applied if newer than the last event applied about the same subject. A ban drops the banned peer's connections at
 * once; forged, unsigned, stale or replayed events are ignored. The last sequence applied per subject is kept in the
 * data folder, so a restart does not make old events new again.
 */
import { Clock, Effect, Either, Layer, type Option, Ref, Stream } from "effect"
import * as MeshEventCodec from "../../domain/MeshEventCodec.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { Metrics } from "../../services/operations/Metrics.js"
import * as EventSequences from "./EventSequences.js"

export const layer = (metricPrefix: string, dataDir: Option.Option<string>) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const membership = yield* Membership
      const host = yield* MeshHost
      const metrics = yield* Metrics
      const received = metrics.counter(`${metricPrefix}mesh_events_total`, "Mesh events received, by type and outcome.")
      const sequences = EventSequences.make(dataDir)
      /** The sequence of the last event applied, per subject. */
      const latest = yield* Ref.make<ReadonlyMap<string, number>>(yield* sequences.load)

      const handle = (data: Uint8Array) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const trusted = yield* membership.trustedKeys
          const decoded = MeshEventCodec.decode(data, trusted, now)
          if (Either.isLeft(decoded)) {
            received.inc({ type: "unknown", outcome: "ignored" })
            return yield* Effect.logDebug("mesh event ignored").pipe(Effect.annotateLogs({ reason: decoded.left }))
          }
          const event = decoded.right
          const fresh = yield* Ref.modify(latest, (seen) =>
            MeshEventCodec.isNewer(seen, event)
              ? [true, new Map([...seen, [MeshEventCodec.subjectOf(event), event.sequence]])]
              : [false, seen],
          )
          if (!fresh) {
            received.inc({ type: event.type, outcome: "replayed" })
            return yield* Effect.logDebug("mesh event not newer than the last one applied; ignored").pipe(
              Effect.annotateLogs({ type: event.type, sequence: event.sequence }),
            )
          }
          received.inc({ type: event.type, outcome: "applied" })
          yield* sequences.save(yield* Ref.get(latest))
          yield* membership.apply(event)
          if (event.type === "banned") {
            yield* host.disconnect(event.peerId)
            yield* Effect.logInfo("banned peer disconnected").pipe(Effect.annotateLogs({ peer_id: event.peerId }))
          }
          if (event.type === "key_rotation") yield* host.reverify
        })

      yield* host.subscribe(MeshEventCodec.TOPIC).pipe(
        Stream.runForEach((message) => handle(message.data)),
        Effect.forkScoped,
      )
    }),
  )

/**
 * Signed mesh events reaching a router or node: checked against the trusted control-plane keys and our clock, then
 * applied. A ban drops the banned peer's connections at once; forged, unsigned or stale events are ignored.
 */
import { Clock, Effect, Either, Layer, Stream } from "effect"
import * as MeshEventCodec from "../../domain/MeshEventCodec.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { Metrics } from "../../services/operations/Metrics.js"

export const layer = (metricPrefix: string) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const membership = yield* Membership
      const host = yield* MeshHost
      const metrics = yield* Metrics
      const received = metrics.counter(`${metricPrefix}mesh_events_total`, "Mesh events received, by type and outcome.")

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
          received.inc({ type: event.type, outcome: "applied" })
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

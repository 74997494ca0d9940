/**
 * Tells the control plane what this node publishes (`POST /nodes/catalog`): the services whose backends answered
 * their probe, soon after joining, whenever that set changes, and every minute. Display only: nothing authorizes
 * from it, so a failed report is a warning and the next one tries again.
 */
import { create } from "@bufbuild/protobuf"
import { Duration, Effect, Layer, Schedule, Stream } from "effect"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import { ServiceInfoSchema } from "../../gen/mesh_pb.js"
import { LocalServices } from "../../services/local/LocalServices.js"
import { ControlPlaneClient } from "../../services/member/ControlPlaneClient.js"
import { Membership } from "../../services/member/Membership.js"

const EVERY = Duration.minutes(1)
/** Services published within this long of each other are reported together. */
const SETTLE = Duration.seconds(1)

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const client = yield* ControlPlaneClient
    const membership = yield* Membership
    const local = yield* LocalServices
    const report = Effect.gen(function* () {
      const services = (yield* local.published).map((s) =>
        create(ServiceInfoSchema, { type: ServiceKeys.toWire(s.type), name: s.name, description: s.description }),
      )
      yield* client.reportCatalog(membership.signer, yield* membership.credential, services)
    }).pipe(Effect.catchAll((error) => Effect.logWarning("catalog report failed", error)))
    yield* Stream.merge(
      local.publishedChanges.pipe(Stream.debounce(SETTLE)),
      Stream.fromSchedule(Schedule.spaced(EVERY)),
    ).pipe(
      Stream.runForEach(() => report),
      Effect.forkScoped,
    )
  }),
)

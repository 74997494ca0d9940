/**
 * PolicyView over the control plane: `GET /policies` with the node's credential at start, every sync interval
 * (jittered by up to a tenth, so a fleet does not ask in step) and on a signed policy event newer than the copy held.
 * Events only ask for a read: reads they ask for run one at a time, at most one waiting, and at least EVENT_GAP
 * apart, so a peer replaying a captured event cannot make the node hammer the control plane. A failed read keeps
 * the last copy: a policy never expires by itself, and an unreachable control plane must not open or close the mesh.
 * The issuer that unqualified identity members name is read from `/info` once, retried until it answers.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt"
import { Clock, Duration, Effect, Either, Layer, Option, Queue, Ref, Schedule, Stream } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as MeshEventCodec from "../../domain/MeshEventCodec.js"
import * as Policy from "../../domain/Policy.js"
import { toDocument } from "../../http/policies/PolicyCodec.js"
import { ControlPlaneClient } from "../../services/member/ControlPlaneClient.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { type PolicySnapshot, PolicyView } from "../../services/node/PolicyView.js"

/** Reads asked for by events are at least this far apart. */
export const EVENT_GAP = Duration.seconds(2)

export const layer = Layer.scoped(
  PolicyView,
  Effect.gen(function* () {
    const client = yield* ControlPlaneClient
    const membership = yield* Membership
    const host = yield* MeshHost
    const settings = yield* NodeConfig
    const current = yield* Ref.make<Option.Option<PolicySnapshot>>(Option.none())

    const refresh = Effect.gen(function* () {
      const answer = yield* client.policies(yield* membership.credential)
      const now = yield* Clock.currentTimeMillis
      const document = answer.policy === undefined ? Policy.empty : toDocument(answer.policy)
      const version = Number(answer.version)
      const before = yield* Ref.get(current)
      yield* Ref.set(current, Option.some({ document, version, fetchedAtMs: now }))
      if (Option.isNone(before) || before.value.version !== version) {
        yield* Effect.logInfo("mesh policy loaded").pipe(
          Effect.annotateLogs({
            version,
            updated: answer.updateTime === undefined ? "never" : new Date(timestampMs(answer.updateTime)).toISOString(),
          }),
        )
      }
    }).pipe(Effect.catchAll((error) => Effect.logWarning("mesh policy read failed; keeping the last copy", error)))

    yield* refresh
    yield* refresh.pipe(
      Effect.repeat(Schedule.spaced(settings.syncInterval).pipe(Schedule.jitteredWith({ min: 1, max: 1.1 }))),
      Effect.delay(settings.syncInterval),
      Effect.forkScoped,
    )

    // A signed policy event newer than our copy says the policy changed: read it now rather than at the next sync.
    // Its sequence is the policy's version, so a replayed event (any event we already hold the policy of) asks
    // for nothing; the requests that remain are coalesced (one waiting at most) and spaced by EVENT_GAP.
    const wanted = yield* Queue.sliding<void>(1)
    yield* Queue.take(wanted).pipe(
      Effect.zipRight(refresh),
      Effect.zipRight(Effect.sleep(EVENT_GAP)),
      Effect.forever,
      Effect.forkScoped,
    )
    yield* host.subscribe(MeshEventCodec.TOPIC).pipe(
      Stream.runForEach((message) =>
        Effect.gen(function* () {
          const decoded = MeshEventCodec.decode(
            message.data,
            yield* membership.trustedKeys,
            yield* Clock.currentTimeMillis,
          )
          if (Either.isLeft(decoded) || decoded.right.type !== "policy_update") return
          const held = yield* Ref.get(current)
          if (Option.isSome(held) && decoded.right.sequence <= held.value.version) return
          yield* Queue.offer(wanted, undefined)
        }),
      ),
      Effect.forkScoped,
    )

    const issuers = yield* Ref.make<Policy.Issuers>([])
    yield* client.info.pipe(
      Effect.flatMap((info) => (info.oidcIssuer.length > 0 ? Ref.set(issuers, [info.oidcIssuer]) : Effect.void)),
      Effect.retry(
        Schedule.exponential(Duration.seconds(1)).pipe(Schedule.union(Schedule.spaced(Duration.minutes(1)))),
      ),
      Effect.forkScoped,
    )

    return PolicyView.of({ current: Ref.get(current), refresh, issuers: Ref.get(issuers) })
  }),
)

/**
 * DriftReporter over the node's data folder (PinnedDefinitions) and the control plane (`POST /nodes/tool-drift`,
 * signed with the member's key over the body). Reports wait in a bounded queue, sent one at a time by a fiber of the
 * layer's scope; one the control plane cannot take now (unreachable, 5xx) is retried with a capped, jittered backoff
 * on the Effect clock, then given up. Every report ends counted in `mesh_node_tool_drift_reports_total{outcome}`:
 * `sent`, `refused` (a 4xx, not retried), `failed` (retries spent) or `dropped` (the queue was full). The definitions
 * are the provider's text: sent, never logged.
 */
import { Duration, Effect, Layer, Queue, Schedule, SynchronizedRef } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as ToolDrift from "../../domain/ToolDrift.js"
import { ControlPlaneClient } from "../../services/member/ControlPlaneClient.js"
import { Membership } from "../../services/member/Membership.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { type Drift, DriftReporter } from "../../services/tooldrift/DriftReporter.js"
import * as PinnedDefinitions from "./PinnedDefinitions.js"

/** Reports waiting to be sent; a node sees few drifts, and a flood of them past this is dropped, not held. */
export const QUEUE_CAP = 256
/** From 1 s doubling to 5 min, with jitter; 10 retries cover about 20 minutes of a control plane away. */
export const RETRY = Schedule.exponential(Duration.seconds(1)).pipe(
  Schedule.union(Schedule.spaced(Duration.minutes(5))),
  Schedule.jittered,
  Schedule.intersect(Schedule.recurs(10)),
)

export const layer = Layer.scoped(
  DriftReporter,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const client = yield* ControlPlaneClient
    const membership = yield* Membership
    const metrics = yield* Metrics
    const outcomes = metrics.counter(
      "mesh_node_tool_drift_reports_total",
      "Tool drift reports to the control plane, by outcome: sent, refused, failed (retries spent) or dropped (queue full).",
    )
    const definitions = yield* SynchronizedRef.make(yield* PinnedDefinitions.load(settings.dataDir))
    const queue = yield* Queue.dropping<Drift>(QUEUE_CAP)

    const oldOf = (drift: Drift, held: PinnedDefinitions.Definitions) => {
      const known = held.get(drift.tool)
      const found = drift.expected.find((fingerprint) => known?.has(fingerprint) === true)
      const fingerprint = found ?? drift.expected[0] ?? ""
      return { fingerprint, text: found === undefined ? "" : (known?.get(found) ?? "") }
    }

    const send = (drift: Drift) =>
      Effect.gen(function* () {
        const old = oldOf(drift, yield* SynchronizedRef.get(definitions))
        const credential = yield* membership.credential
        yield* client.reportToolDrift(membership.signer, credential, {
          providerPeerId: drift.providerPeerId,
          providerLabels: { ...drift.providerLabels },
          tool: drift.tool,
          against: drift.against,
          oldFingerprint: old.fingerprint,
          oldDefinition: old.text,
          newFingerprint: drift.fingerprint,
          newDefinition: ToolDrift.definitionText(drift.definition),
        })
      }).pipe(
        Effect.retry({ schedule: RETRY, while: (error) => error._tag === "ControlPlaneUnreachable" }),
        Effect.matchEffect({
          onSuccess: () => Effect.sync(() => outcomes.inc({ outcome: "sent" })),
          onFailure: (error) =>
            Effect.sync(() =>
              outcomes.inc({ outcome: error._tag === "ControlPlaneRefused" ? "refused" : "failed" }),
            ).pipe(
              Effect.zipRight(
                Effect.logWarning("tool drift report not delivered").pipe(
                  Effect.annotateLogs({ tool: drift.tool, provider: drift.providerPeerId, reason: error.message }),
                ),
              ),
            ),
        }),
      )

    yield* Queue.take(queue).pipe(Effect.flatMap(send), Effect.forever, Effect.forkScoped)

    return DriftReporter.of({
      remember: (tool, fingerprint, definition) =>
        Effect.gen(function* () {
          // The common case, a definition kept already, costs a lookup.
          if ((yield* SynchronizedRef.get(definitions)).get(tool)?.has(fingerprint) === true) return
          const text = ToolDrift.definitionText(definition)
          yield* SynchronizedRef.updateEffect(definitions, (held) => {
            const added = PinnedDefinitions.add(held, tool, fingerprint, text)
            return added === undefined
              ? Effect.succeed(held)
              : Effect.as(PinnedDefinitions.save(settings.dataDir, added), added)
          })
        }),
      report: (drift) =>
        Effect.flatMap(Queue.offer(queue, drift), (queued) =>
          queued ? Effect.void : Effect.sync(() => outcomes.inc({ outcome: "dropped" })),
        ),
    })
  }),
)

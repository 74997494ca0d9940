/**
 * The node's drift reporter under the test clock, with a control plane client that answers as told: a report the
 * control plane cannot take now is retried until it is taken, a refused one is not retried, and reports past the
 * queue's cap are dropped and counted, never held.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Layer, Redacted, Ref, TestClock } from "effect"
import * as NodeConfig from "../../src/config/NodeConfig.js"
import * as MetricsLive from "../../src/layers/operations/MetricsLive.js"
import * as DriftReporterLive from "../../src/layers/tooldrift/DriftReporterLive.js"
import {
  ControlPlaneClient,
  type ControlPlaneClientService,
  type ControlPlaneError,
  ControlPlaneRefused,
  ControlPlaneUnreachable,
} from "../../src/services/member/ControlPlaneClient.js"
import { Membership, type MembershipService } from "../../src/services/member/Membership.js"
import { Metrics } from "../../src/services/operations/Metrics.js"
import { type Drift, DriftReporter } from "../../src/services/tooldrift/DriftReporter.js"

const folder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-drift-queue-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
)

const drift = (i: number): Drift => ({
  providerPeerId: "12D3KooWProvider",
  providerLabels: {},
  tool: "mcp://demo/word_count",
  against: "first_use",
  expected: ["sha256:old"],
  fingerprint: `sha256:${i}`,
  definition: { name: "word_count", description: `variant ${i}` },
})

/** The reporter over `send`, which stands for the control plane's answer to each report. */
const reporter = (dir: string, send: ControlPlaneClientService["reportToolDrift"]) =>
  DriftReporterLive.layer.pipe(
    Layer.provide(Layer.succeed(ControlPlaneClient, { reportToolDrift: send } as unknown as ControlPlaneClientService)),
    Layer.provide(
      Layer.succeed(Membership, {
        signer: { peerId: "12D3KooWNode", seed: new Uint8Array(32), publicKey: new Uint8Array(32) },
        credential: Effect.succeed(new Uint8Array([1])),
      } as unknown as MembershipService),
    ),
    Layer.provide(
      Layer.succeed(
        NodeConfig.NodeConfig,
        NodeConfig.make({
          dataDir: dir,
          apiToken: Redacted.make("unused-token-0000"),
          file: { labels: {}, egress: { require_labels: {} }, services: [] },
        }),
      ),
    ),
  )

const count = (text: string, outcome: string): number => {
  const line = text.split("\n").find((l) => l.startsWith(`mesh_node_tool_drift_reports_total{outcome="${outcome}"}`))
  return line === undefined ? 0 : Number(line.split(" ").pop())
}

describe("the node's drift reporter", () => {
  it.scoped("retries while the control plane is away, and does not retry a refusal", () =>
    Effect.gen(function* () {
      const dir = yield* folder
      const calls = yield* Ref.make<ReadonlyArray<string>>([])
      const context = yield* Layer.build(
        reporter(dir, (_signer, _credential, report) =>
          Effect.flatMap(
            Ref.updateAndGet(calls, (c) => [...c, String(report.newFingerprint)]),
            (seen): Effect.Effect<void, ControlPlaneError> => {
              if (report.newFingerprint === "sha256:2") {
                return Effect.fail(new ControlPlaneRefused({ status: 400, code: "bad_request", reason: "no" }))
              }
              return seen.length < 3 ? Effect.fail(new ControlPlaneUnreachable({ reason: "down" })) : Effect.void
            },
          ),
        ),
      )
      const drifts = Context.get(context, DriftReporter)
      yield* drifts.report(drift(1))
      // Away twice, then taken: three attempts, one report sent.
      for (let i = 0; i < 20; i++) yield* TestClock.adjust(Duration.minutes(1))
      expect(yield* Ref.get(calls)).toEqual(["sha256:1", "sha256:1", "sha256:1"])
      yield* drifts.report(drift(2))
      for (let i = 0; i < 20; i++) yield* TestClock.adjust(Duration.minutes(1))
      expect((yield* Ref.get(calls)).filter((c) => c === "sha256:2")).toHaveLength(1)
      const text = (yield* Metrics).render()
      expect([count(text, "sent"), count(text, "refused"), count(text, "failed")]).toEqual([1, 1, 0])
    }).pipe(Effect.provide(MetricsLive.layer)),
  )

  it.scoped("drops and counts what does not fit in the queue while a report is on its way", () =>
    Effect.gen(function* () {
      const dir = yield* folder
      const sending = yield* Deferred.make<void>()
      const context = yield* Layer.build(
        reporter(dir, () => Effect.zipRight(Deferred.succeed(sending, undefined), Effect.never)),
      )
      const drifts = Context.get(context, DriftReporter)
      yield* drifts.report(drift(0))
      yield* Deferred.await(sending)
      for (let i = 1; i <= DriftReporterLive.QUEUE_CAP + 5; i++) yield* drifts.report(drift(i))
      expect(count((yield* Metrics).render(), "dropped")).toBe(5)
    }).pipe(Effect.provide(MetricsLive.layer)),
  )
})

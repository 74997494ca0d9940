/**
 * The control-plane binary traces as the standard environment asks: with `OTEL_EXPORTER_OTLP_ENDPOINT` set it exports
 * OTLP/HTTP under its own name with the resource attributes given, continuing a caller's `traceparent`.
 */
import { randomBytes } from "node:crypto"
import { expect, it } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import * as ControlPlaneProcess from "../scale/ControlPlaneProcess.js"
import { receiver } from "../support/otlpReceiver.js"

it.scopedLive(
  "mesh-control-plane exports its spans to OTEL_EXPORTER_OTLP_ENDPOINT as mesh-control-plane",
  () =>
    Effect.gen(function* () {
      const collector = yield* receiver
      const cp = yield* ControlPlaneProcess.start({
        database: TestDatabase.sqliteMemory,
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url.replace(/\/v1\/traces$/, ""),
          OTEL_BSP_SCHEDULE_DELAY: "100",
          OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=cli-test",
        },
      })
      const traceId = randomBytes(16).toString("hex")
      const parent = randomBytes(8).toString("hex")
      const status = yield* Effect.promise(() =>
        fetch(`${cp.url}/admin/status`, {
          headers: { authorization: `Bearer ${cp.adminToken}`, traceparent: `00-${traceId}-${parent}-01` },
        }).then((r) => r.status),
      )
      expect(status).toBe(200)
      // The request's own span: the last of its trace to end, so the last exported.
      const root = yield* Effect.sync(() =>
        collector.spans.find((s) => s.traceId === traceId && s.parentSpanId === parent),
      ).pipe(
        Effect.filterOrFail((found) => found !== undefined),
        Effect.retry(Schedule.spaced(Duration.millis(100)).pipe(Schedule.upTo(Duration.seconds(30)))),
        Effect.orDie,
      )
      expect(root).toMatchObject({
        name: "GET /admin/status",
        service: "mesh-control-plane",
        resource: { "service.name": "mesh-control-plane", "deployment.environment": "cli-test" },
      })
      expect(collector.bodies.join("\n")).not.toContain(cp.adminToken)
    }),
  { timeout: 120_000 },
)

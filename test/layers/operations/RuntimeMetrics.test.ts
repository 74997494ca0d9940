/**
 * The process's own figures in every registry: under their conventional names, and the event loop's delay past its
 * schedule, which is none for an idle loop and shows a loop held up by synchronous work, sampled as rarely as it is.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as MetricsLive from "../../../src/layers/operations/MetricsLive.js"
import { Metrics } from "../../../src/services/operations/Metrics.js"
import { seriesValue } from "../../support/metrics.js"

/** Keeps the thread busy: nothing else on the loop runs meanwhile. */
const block = (ms: number) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // spin
  }
}

describe("runtime metrics", () => {
  it.live("are rendered under their conventional names", () =>
    Effect.gen(function* () {
      const scrape = (yield* Metrics).render()
      for (const name of [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "nodejs_heap_used_bytes",
        "nodejs_heap_total_bytes",
        "process_start_time_seconds",
        "nodejs_active_handles",
      ]) {
        expect(seriesValue(scrape, name)).toBeGreaterThan(0)
      }
    }).pipe(Effect.provide(MetricsLive.layer)),
  )

  it.live("an idle loop shows no delay; one blocked past a sample shows the rest of the block", () =>
    Effect.gen(function* () {
      const metrics = yield* Metrics
      const lag = () => seriesValue(metrics.render(), "nodejs_eventloop_lag_p99_seconds")
      // Samples come every second; the first only starts the count. Two seconds idle: one sample, on time.
      yield* Effect.sleep("2100 millis")
      expect(lag()).toBeLessThan(0.5)
      // Blocked across the next sample's time: it fires late by the rest of the block (about 0.7 s).
      block(1_600)
      yield* Effect.sleep("50 millis")
      expect(lag()).toBeGreaterThan(0.2)
    }).pipe(Effect.provide(MetricsLive.layer)),
  )
})

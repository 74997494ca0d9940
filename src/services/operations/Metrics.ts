/**
 * A small Prometheus registry, one per process role (control plane, router, node), so that several instances in one
 * test process keep separate figures. Instruments are synchronous and cheap: they sit on every request's path.
 */
import { Context } from "effect"

export type Labels = Readonly<Record<string, string>>

export interface Counter {
  readonly inc: (labels?: Labels, by?: number) => void
}

export interface Gauge {
  readonly set: (labels: Labels, value: number) => void
  /** Drops every series, for gauges recomputed from a snapshot where a label value may disappear. */
  readonly reset: () => void
}

export interface Histogram {
  readonly observe: (labels: Labels, value: number) => void
}

export interface MetricsRegistry {
  readonly counter: (name: string, help: string) => Counter
  readonly gauge: (name: string, help: string) => Gauge
  readonly histogram: (name: string, help: string, buckets: ReadonlyArray<number>) => Histogram
  /** Registers a function run before each scrape, to refresh gauges from state held elsewhere. */
  readonly beforeScrape: (refresh: () => void) => void
  /** The Prometheus text exposition (version 0.0.4) of every instrument. */
  readonly render: () => string
}

export class Metrics extends Context.Tag("mesh/Metrics")<Metrics, MetricsRegistry>() {}

/** Latency buckets in seconds for HTTP routes, from 1 ms to 10 s. */
export const LATENCY_BUCKETS: ReadonlyArray<number> = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]

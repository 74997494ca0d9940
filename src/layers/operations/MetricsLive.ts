/** The in-memory implementation of the Metrics registry, plus the language runtime's own figures. */
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Effect, Layer } from "effect"
import {
  type Counter,
  type Gauge,
  type Histogram,
  type Labels,
  Metrics,
  type MetricsRegistry,
} from "../../services/operations/Metrics.js"

/** On every request's path: no sort for one label, no escaping pass for values that need none. */
const labelKey = (labels: Labels): string => {
  const keys = Object.keys(labels)
  if (keys.length > 1) keys.sort()
  let key = ""
  for (const k of keys) {
    const value = labels[k] ?? ""
    key += `${key === "" ? "" : ","}${k}="${NEEDS_ESCAPE.test(value) ? escapeLabel(value) : value}"`
  }
  return key
}

const NEEDS_ESCAPE = /[\\\n"]/

const escapeLabel = (value: string): string => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')

const series = (name: string, key: string, value: number): string =>
  `${name}${key.length > 0 ? `{${key}}` : ""} ${Number.isFinite(value) ? value : value > 0 ? "+Inf" : "-Inf"}`

interface Family {
  readonly render: (out: Array<string>) => void
}

export const make = (): MetricsRegistry => {
  const families = new Map<string, Family>()
  const refreshers: Array<() => void> = []

  const register = <A>(name: string, type: string, help: string, build: () => [A, (out: Array<string>) => void]): A => {
    const existing = families.get(name) as (Family & { readonly instrument: A }) | undefined
    if (existing !== undefined) return existing.instrument
    const [instrument, renderValues] = build()
    families.set(name, {
      instrument,
      render: (out) => {
        out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
        renderValues(out)
      },
    } as Family & { readonly instrument: A })
    return instrument
  }

  const counter = (name: string, help: string): Counter =>
    register(name, "counter", help, () => {
      const values = new Map<string, number>()
      return [
        {
          inc: (labels = {}, by = 1) => {
            const key = labelKey(labels)
            values.set(key, (values.get(key) ?? 0) + by)
          },
        },
        (out) => {
          for (const [key, value] of values) out.push(series(name, key, value))
        },
      ]
    })

  const gauge = (name: string, help: string): Gauge =>
    register(name, "gauge", help, () => {
      const values = new Map<string, number>()
      return [
        { set: (labels, value) => void values.set(labelKey(labels), value), reset: () => values.clear() },
        (out) => {
          for (const [key, value] of values) out.push(series(name, key, value))
        },
      ]
    })

  const histogram = (name: string, help: string, buckets: ReadonlyArray<number>): Histogram =>
    register(name, "histogram", help, () => {
      const values = new Map<string, { counts: Array<number>; sum: number; count: number }>()
      return [
        {
          observe: (labels, value) => {
            const key = labelKey(labels)
            let entry = values.get(key)
            if (entry === undefined) {
              entry = { counts: buckets.map(() => 0), sum: 0, count: 0 }
              values.set(key, entry)
            }
            for (let i = 0; i < buckets.length; i++)
              if (value <= (buckets[i] ?? 0)) entry.counts[i] = (entry.counts[i] ?? 0) + 1
            entry.sum += value
            entry.count += 1
          },
        },
        (out) => {
          for (const [key, entry] of values) {
            const prefix = key.length > 0 ? `${key},` : ""
            buckets.forEach((bound, i) => {
              out.push(`${name}_bucket{${prefix}le="${bound}"} ${entry.counts[i] ?? 0}`)
            })
            out.push(`${name}_bucket{${prefix}le="+Inf"} ${entry.count}`)
            out.push(series(`${name}_sum`, key, entry.sum), series(`${name}_count`, key, entry.count))
          }
        },
      ]
    })

  return {
    counter,
    gauge,
    histogram,
    beforeScrape: (refresh) => void refreshers.push(refresh),
    render: () => {
      for (const refresh of refreshers) refresh()
      const out: Array<string> = []
      for (const family of families.values()) family.render(out)
      return `${out.join("\n")}\n`
    },
  }
}

/**
 * How often the event loop's delay is sampled. Each sample wakes the process (a libuv timer of its own): at 20 ms
 * that was 50 wake-ups a second in every idle node, router and control plane, a tenth of an idle node's CPU.
 * A stall still shows at this rate: a sample due while the loop is blocked fires late by the rest of the block, and
 * samples come late about as often as the loop is stalled, so the p99 still sees stalls that take 1% of the time.
 */
const LOOP_DELAY_SAMPLE_MS = 1000
const LOOP_DELAY_SAMPLE_NS = LOOP_DELAY_SAMPLE_MS * 1e6

/** Runtime figures under their conventional names, refreshed at each scrape. */
const runtimeMetrics = (registry: MetricsRegistry) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_SAMPLE_MS })
      loopDelay.enable()
      const cpu = registry.gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")
      const rss = registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.")
      const heap = registry.gauge("nodejs_heap_used_bytes", "V8 heap in use, in bytes.")
      const heapTotal = registry.gauge("nodejs_heap_total_bytes", "V8 heap reserved, in bytes.")
      const lag = registry.gauge(
        "nodejs_eventloop_lag_p99_seconds",
        "Event loop delay past its schedule, 99th percentile since start.",
      )
      const start = registry.gauge("process_start_time_seconds", "Start time of the process since the unix epoch.")
      const handles = registry.gauge("nodejs_active_handles", "Active libuv handles.")
      // process.uptime is monotonic; the start time is read once from the wall clock, which is what it means.
      const startSeconds = Math.round(performanceOrigin() / 1000)
      registry.beforeScrape(() => {
        const usage = process.cpuUsage()
        const memory = process.memoryUsage()
        cpu.set({}, (usage.user + usage.system) / 1e6)
        rss.set({}, memory.rss)
        heap.set({}, memory.heapUsed)
        heapTotal.set({}, memory.heapTotal)
        // Node records the time from one sample to the next, the interval included: the delay is what exceeds it.
        const late = loopDelay.count === 0 ? 0 : Math.max(0, loopDelay.percentile(99) - LOOP_DELAY_SAMPLE_NS)
        lag.set({}, late / 1e9)
        start.set({}, startSeconds)
        handles.set({}, activeHandles())
      })
      return loopDelay
    }),
    (loopDelay) => Effect.sync(() => loopDelay.disable()),
  )

const performanceOrigin = (): number => performance.timeOrigin

const activeHandles = (): number => {
  const getActiveResourcesInfo = (process as { getActiveResourcesInfo?: () => Array<string> }).getActiveResourcesInfo
  return getActiveResourcesInfo === undefined ? 0 : getActiveResourcesInfo().length
}

export const layer: Layer.Layer<Metrics> = Layer.scoped(
  Metrics,
  Effect.gen(function* () {
    const registry = make()
    yield* runtimeMetrics(registry)
    return registry
  }),
)

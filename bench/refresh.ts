/**
 * POST /refresh over HTTP on sqlite and postgres: throughput against the crypto-bound ceiling (the in-process cost
 * of the challenge check, biscuit verify and biscuit mint, one core), and p99 latency with 100k node records and 10k
 * bootstrap tokens in the database against the same run with 1k. Each load worker is one node refreshing in a loop,
 * carrying its newest credential forward. Percentiles are of all workers' latencies pooled, over at least MIN_SAMPLES.
 */
import * as Ceilings from "./lib/ceilings.js"
import { type Driver, launch, pgAvailable } from "./lib/controlPlane.js"
import * as ControlPlaneLoads from "./lib/controlPlaneLoads.js"
import { goals } from "./lib/goals.js"
import * as Load from "./lib/load.js"
import type { Entry } from "./lib/report.js"
import * as Seed from "./lib/seed.js"

const CONCURRENCY = 16
/** One round of load; rounds repeat until the pool holds MIN_SAMPLES latencies (or MAX_ROUNDS were run). */
const SECONDS = 5
/** A p99 over fewer samples is a handful of outliers: 2000 puts 20 samples above it. */
const MIN_SAMPLES = 2000
const MAX_ROUNDS = 12

interface Run {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly samples: number
  readonly rss: number
}

const measure = async (driver: Driver, records: number, tokens: number): Promise<Run> => {
  const cp = await launch(driver)
  try {
    await Seed.bulk(cp, records, tokens)
    const workers = await Seed.nodes(cp, CONCURRENCY)
    const round = () => ControlPlaneLoads.refreshing(cp, workers, SECONDS)
    const pool: Array<number> = []
    let rounds = 0
    while (pool.length < MIN_SAMPLES && rounds < MAX_ROUNDS) {
      const results = await round()
      rounds++
      const failed = results.find((r) => r.errors > 0)
      if (failed !== undefined)
        throw new Error(`refresh on ${driver}: ${failed.errors} failed requests: ${failed.firstError}`)
      for (const r of results) pool.push(...r.latencies)
    }
    pool.sort((a, b) => a - b)
    return {
      rps: pool.length / (rounds * SECONDS),
      p50: Load.percentile(pool, 50),
      p99: Load.percentile(pool, 99),
      samples: pool.length,
      rss: await Seed.residentMemory(cp.url),
    }
  } finally {
    await cp.close()
  }
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const entries = async (driver: Driver, ceiling: number, goal: number): Promise<ReadonlyArray<Entry>> => {
  const small = await measure(driver, 1_000, 100)
  const large = await measure(driver, 100_000, 10_000)
  return [
    {
      name: `POST /refresh (${driver}, 1k nodes)`,
      figure: small.rps,
      unit: "req/s",
      baselineName: "crypto ceiling, 1 core",
      baseline: ceiling,
      ratio: small.rps / ceiling,
      goal: `>= ${goal * 100}%`,
      met: small.rps / ceiling >= goal,
      notes: `p50 ${small.p50.toFixed(2)} ms, p99 ${small.p99.toFixed(2)} ms of ${small.samples} pooled latencies, RSS ${mb(small.rss)}; ${CONCURRENCY} nodes refreshing in a loop`,
    },
    {
      name: `POST /refresh p99 (${driver}, 100k nodes, 10k tokens)`,
      figure: large.p99,
      unit: "ms",
      baselineName: "p99 with 1k nodes",
      baseline: small.p99,
      ratio: large.p99 / small.p99,
      goal: `<= ${goals.refresh.p99GrowthAt100k}x`,
      met: large.p99 / small.p99 <= goals.refresh.p99GrowthAt100k,
      notes: `p99 of ${large.samples} pooled latencies (1k: ${small.samples}); ${large.rps.toFixed(0)} req/s, p50 ${large.p50.toFixed(2)} ms, RSS ${mb(large.rss)} (1k: ${mb(small.rss)})`,
    },
  ]
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const ceiling = Ceilings.refresh()
  const out = [...(await entries("sqlite", ceiling, goals.refresh.sqlite))]
  if (await pgAvailable()) out.push(...(await entries("postgres", ceiling, goals.refresh.postgres)))
  else process.stdout.write("postgres not reachable: skipping the postgres refresh entries\n")
  return out
}

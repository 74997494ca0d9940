/**
 * GET /info and GET /keys, served from memory, against a bare node:http server answering the same bytes (goal in
 * lib/goals.ts: a share of its throughput), with 1k and with 100k node records in the database (the p99 should not care).
 */

import { launch } from "./lib/controlPlane.js"
import { goals } from "./lib/goals.js"
import * as Load from "./lib/load.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"
import * as Seed from "./lib/seed.js"

const CONCURRENCY = 32
const SECONDS = 5

const bare = async (bytes: Uint8Array) => {
  const port = await freePort()
  const server = await start(
    "bench/servers/bare.ts",
    [String(port), "application/x-protobuf", Buffer.from(bytes).toString("base64"), "base64"],
    `http://127.0.0.1:${port}/`,
  )
  try {
    return await Load.run({ url: `http://127.0.0.1:${port}/`, concurrency: CONCURRENCY, seconds: SECONDS })
  } finally {
    await server.stop()
  }
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const entries: Array<Entry> = []
  for (const records of [1_000, 100_000]) {
    const cp = await launch("sqlite")
    try {
      await Seed.bulk(cp, records, records / 10)
      for (const route of ["/info", "/keys"]) {
        const bytes = new Uint8Array(await (await fetch(`${cp.url}${route}`)).arrayBuffer())
        const figure = await Load.run({ url: `${cp.url}${route}`, concurrency: CONCURRENCY, seconds: SECONDS })
        if (figure.errors > 0) throw new Error(`${route}: ${figure.errors} failed requests: ${figure.firstError}`)
        const baseline = await bare(bytes)
        entries.push({
          name: `GET ${route} (sqlite, ${records / 1000}k nodes)`,
          figure: figure.rps,
          unit: "req/s",
          baselineName: "bare node:http, same bytes",
          baseline: baseline.rps,
          ratio: figure.rps / baseline.rps,
          goal: `>= ${goals.infoKeys.shareOfBare * 100}%`,
          met: figure.rps / baseline.rps >= goals.infoKeys.shareOfBare,
          notes: `p50 ${figure.p50Ms.toFixed(2)} ms, p99 ${figure.p99Ms.toFixed(2)} ms (bare p99 ${baseline.p99Ms.toFixed(2)} ms); ${bytes.length} bytes; RSS ${((await Seed.residentMemory(cp.url)) / 1048576).toFixed(0)} MiB`,
        })
      }
    } finally {
      await cp.close()
    }
  }
  return entries
}

/**
 * HTTP overhead of the control plane: GET /healthz through the full stack (HttpApi, middleware, metrics) against a
 * bare node:http server answering the same bytes, both in child processes, same load.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Load from "./lib/load.js"
import { freePort, start } from "./lib/processes.js"
import type { Entry } from "./lib/report.js"

const CONCURRENCY = 32
const SECONDS = 5

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const barePort = await freePort()
  const bare = await start("bench/servers/bare.ts", [String(barePort)], `http://127.0.0.1:${barePort}/`)
  const baseline = await Load.run({
    url: `http://127.0.0.1:${barePort}/healthz`,
    concurrency: CONCURRENCY,
    seconds: SECONDS,
  })
  await bare.stop()

  const cpPort = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "mesh-bench-"))
  const cp = await start(
    "src/bin/mesh-control-plane.ts",
    [
      "--issuer",
      "http://127.0.0.1:1",
      "--bind-address",
      `127.0.0.1:${cpPort}`,
      "--db-dsn",
      join(dir, "cp.db"),
      "--log-level",
      "warn",
    ],
    `http://127.0.0.1:${cpPort}/readyz`,
  )
  const figure = await Load.run({
    url: `http://127.0.0.1:${cpPort}/healthz`,
    concurrency: CONCURRENCY,
    seconds: SECONDS,
  })
  await cp.stop()
  for (const r of [baseline, figure]) if (r.errors > 0) throw new Error(`requests failed: ${r.firstError}`)
  return [
    {
      name: "GET /healthz throughput (sqlite)",
      figure: figure.rps,
      unit: "req/s",
      baselineName: "bare node:http",
      baseline: baseline.rps,
      ratio: figure.rps / baseline.rps,
      notes: `p50 ${figure.p50Ms.toFixed(2)} ms, p99 ${figure.p99Ms.toFixed(2)} ms (bare p99 ${baseline.p99Ms.toFixed(2)} ms); ${CONCURRENCY} connections`,
    },
  ]
}

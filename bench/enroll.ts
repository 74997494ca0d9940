/**
 * Auto-approved POST /enroll over HTTP on sqlite and postgres, against the crypto-bound ceiling (peer key binding,
 * challenge check and biscuit mint, one core). Every request is a new peer; keys are made before the clock starts.
 */
import * as Ceilings from "./lib/ceilings.js"
import { type Driver, launch, pgAvailable } from "./lib/controlPlane.js"
import * as ControlPlaneLoads from "./lib/controlPlaneLoads.js"
import { goals } from "./lib/goals.js"
import type { Entry } from "./lib/report.js"
import * as Seed from "./lib/seed.js"

const CONCURRENCY = 16
const SECONDS = 5
const PEERS = 20_000

const measure = async (driver: Driver, ceiling: number, goal: number): Promise<Entry> => {
  const cp = await launch(driver, ["--auto-approve-enrollment", "--enroll-rate-limit", "0"])
  try {
    const token = await Seed.token(cp, PEERS)
    const keys = ControlPlaneLoads.peerKeys(PEERS)
    const result = await ControlPlaneLoads.enrolling(cp, token, keys, { concurrency: CONCURRENCY, seconds: SECONDS })
    if (result.errors > 0)
      throw new Error(`enroll on ${driver}: ${result.errors} failed requests: ${result.firstError}`)
    return {
      name: `POST /enroll, auto-approved (${driver})`,
      figure: result.rps,
      unit: "req/s",
      baselineName: "crypto ceiling, 1 core",
      baseline: ceiling,
      ratio: result.rps / ceiling,
      goal: `>= ${goal * 100}%`,
      met: result.rps / ceiling >= goal,
      notes: `p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms; ${CONCURRENCY} connections, a new peer each request`,
    }
  } finally {
    await cp.close()
  }
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const ceiling = Ceilings.enroll()
  const out = [await measure("sqlite", ceiling, goals.enroll.sqlite)]
  if (await pgAvailable()) out.push(await measure("postgres", ceiling, goals.enroll.postgres))
  return out
}

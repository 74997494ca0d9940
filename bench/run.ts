/**
 * `npm run bench`: runs every benchmark, prints the table and writes bench/results/latest.{md,json}.
 * `npm run bench -- <name>` runs the benchmarks whose module name contains <name>.
 */
import "../src/platform/biscuit-wasm.js"
import { join } from "node:path"
import type { Entry } from "./lib/report.js"
import * as Report from "./lib/report.js"

const benchmarks: ReadonlyArray<readonly [string, () => Promise<{ run: () => Promise<ReadonlyArray<Entry>> }>]> = [
  ["http-overhead", () => import("./http-overhead.js")],
  ["refresh", () => import("./refresh.js")],
  ["enroll", () => import("./enroll.js")],
  ["info-keys", () => import("./info-keys.js")],
  ["mesh", () => import("./mesh.js")],
  ["proxy", () => import("./proxy.js")],
  ["inference", () => import("./inference.js")],
  ["mcp", () => import("./mcp.js")],
  ["toolsearch", () => import("./toolsearch.js")],
  ["toolpinning", () => import("./toolpinning.js")],
  ["agents", () => import("./agents.js")],
  ["rtt", () => import("./rtt.js")],
  ["nat", () => import("./nat.js")],
]

const filter = process.argv[2]
const entries: Array<Entry> = []
for (const [name, load] of benchmarks) {
  if (filter !== undefined && !name.includes(filter)) continue
  process.stdout.write(`running ${name}...\n`)
  entries.push(...(await (await load()).run()))
}
process.stdout.write(`\n${Report.write(entries, join(import.meta.dirname, "results"))}`)

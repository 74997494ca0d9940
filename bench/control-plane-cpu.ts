/**
 * `tsx bench/control-plane-cpu.ts [info|keys|refresh|enroll] [sqlite|postgres] [seconds]`: the control plane's CPU
 * time (user + system, from /proc) per request under the same load as the `info-keys`, `refresh` and `enroll`
 * benchmarks, and for `info`/`keys` a bare node:http server's for the same bytes. Unlike throughput, CPU per request
 * hardly moves with other load on a shared machine, so runs before and after a change compare.
 */
import { readFileSync } from "node:fs"
import "../src/platform/biscuit-wasm.js"
import { type Driver, launch } from "./lib/controlPlane.js"
import * as ControlPlaneLoads from "./lib/controlPlaneLoads.js"
import * as Load from "./lib/load.js"
import { freePort, start } from "./lib/processes.js"
import * as Seed from "./lib/seed.js"

const [what = "info", driver = "sqlite", secondsArg = "5"] = process.argv.slice(2) as [string, Driver, string]
const SECONDS = Number(secondsArg)
const TICK_MS = 10

const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

const measured = async (pid: number, load: () => Promise<ReadonlyArray<Load.LoadResult>>) => {
  const before = cpuMs(pid)
  const results = await load()
  const cpu = cpuMs(pid) - before
  const failed = results.find((r) => r.errors > 0)
  if (failed !== undefined) throw new Error(`${failed.errors} failed: ${failed.firstError}`)
  // Warm-up requests are not in `requests` but did cost CPU: count them by rate.
  const requests = results.reduce((n, r) => n + r.requests, 0)
  const rps = requests / SECONDS
  return { rps, cpuPerRequest: cpu / (rps * (SECONDS + 1)) }
}

const line = (name: string, r: { rps: number; cpuPerRequest: number }) =>
  process.stdout.write(`${name}: ${r.rps.toFixed(0)} req/s, ${r.cpuPerRequest.toFixed(3)} ms CPU per request\n`)

const cp = await launch(driver, what === "enroll" ? ["--auto-approve-enrollment", "--enroll-rate-limit", "0"] : [])
const pid = cp.child.process.pid as number
try {
  if (what === "info" || what === "keys") {
    await Seed.bulk(cp, 1_000, 100)
    const url = `${cp.url}/${what}`
    const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer())
    line(`GET /${what}`, await measured(pid, async () => [await Load.run({ url, concurrency: 32, seconds: SECONDS })]))
    const port = await freePort()
    const bare = await start(
      "bench/servers/bare.ts",
      [String(port), "application/x-protobuf", Buffer.from(bytes).toString("base64"), "base64"],
      `http://127.0.0.1:${port}/`,
    )
    try {
      line(
        "bare",
        await measured(bare.process.pid as number, async () => [
          await Load.run({ url: `http://127.0.0.1:${port}/`, concurrency: 32, seconds: SECONDS }),
        ]),
      )
    } finally {
      await bare.stop()
    }
  } else if (what === "refresh") {
    await Seed.bulk(cp, 1_000, 100)
    const workers = await Seed.nodes(cp, 16)
    const result = await measured(pid, () => ControlPlaneLoads.refreshing(cp, workers, SECONDS))
    line(`POST /refresh (${driver})`, result)
  } else {
    const token = await Seed.token(cp, 20_000)
    const keys = ControlPlaneLoads.peerKeys(5_000)
    const result = await measured(pid, async () => [
      await ControlPlaneLoads.enrolling(cp, token, keys, { concurrency: 16, seconds: SECONDS }),
    ])
    line(`POST /enroll (${driver})`, result)
  }
} finally {
  await cp.close()
}

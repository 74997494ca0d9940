/**
 * `tsx bench/profile.ts <dir> [<text a profile must hold>] [<rows>]`: self time by area (package, Node module or our
 * folder) and by function in each V8 CPU profile of `dir`, idle left out. Profiles come from a benchmark run with
 * `MESH_CPU_PROF_DIR=<dir>` (test/scale/MemberProcess.ts starts the mesh's processes with `--cpu-prof` then); the
 * text picks a process, e.g. `PeerProxyLive` for a calling node, `PeerIngressLive` for a serving one (both hold
 * both modules; the busier one's counts tell). `SKIP_S` leaves out the first seconds (start-up, module loading).
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

interface Profile {
  readonly nodes: ReadonlyArray<{
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  }>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const NOT_BUSY = new Set(["(idle)", "(program)"])

/** A package, a Node module, or our folder two levels down (`src/layers/proxy`). */
const areaOf = (url: string, name: string): string => {
  if (url === "") return name
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg !== null) return pkg[1] as string
  if (url.startsWith("node:")) return url
  const ours = /\/((src|bench|test)\/[^/]+(\/[^/.]+)?)/.exec(url)
  return ours === null ? url : (ours[1] as string)
}

const table = (rows: Map<string, number>, busy: number, count: number): string =>
  [...rows]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(
      ([key, us]) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${key}`,
    )
    .join("\n")

const [dir = ".", holding, rows = "25"] = process.argv.slice(2)
const skip = Number(process.env.SKIP_S ?? 0) * 1e6
for (const file of readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
  const text = readFileSync(join(dir, file), "utf8")
  if (holding !== undefined && !text.includes(holding)) continue
  const profile = JSON.parse(text) as Profile
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]))
  const byArea = new Map<string, number>()
  const byFunction = new Map<string, number>()
  let at = 0
  let busy = 0
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0
    at += delta
    const frame = frames.get(id)
    if (at < skip || frame === undefined || NOT_BUSY.has(frame.functionName)) return
    busy += delta
    const name = frame.functionName === "" ? "(anonymous)" : frame.functionName
    const area = areaOf(frame.url, name)
    byArea.set(area, (byArea.get(area) ?? 0) + delta)
    const key = frame.url === "" ? name : `${name} ${area}:${frame.lineNumber + 1}`
    byFunction.set(key, (byFunction.get(key) ?? 0) + delta)
  })
  const count = Number(rows)
  process.stdout.write(
    `== ${file}: ${(busy / 1e6).toFixed(1)} s busy\n-- by area\n${table(byArea, busy, count)}\n-- by function\n${table(byFunction, busy, count)}\n`,
  )
}

/** The benchmark table: each figure next to its baseline measured in the same run, printed and written to results/. */
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"

export interface Entry {
  readonly name: string
  readonly figure: number
  readonly unit: string
  readonly baselineName: string
  readonly baseline: number
  /** figure / baseline, for throughput; for latency-style entries the caller states what the ratio means. */
  readonly ratio: number
  readonly goal?: string
  readonly met?: boolean
  readonly notes?: string
}

const fmt = (n: number) => (Number.isFinite(n) ? (Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(2)) : "n/a")

export const write = (entries: ReadonlyArray<Entry>, dir: string): string => {
  const header = `| benchmark | figure | baseline | ratio | goal | notes |\n|---|---|---|---|---|---|`
  const rows = entries.map(
    (e) =>
      `| ${e.name} | ${fmt(e.figure)} ${e.unit} | ${e.baselineName}: ${fmt(e.baseline)} ${e.unit} | ${fmt(e.ratio)} | ${
        e.goal === undefined ? "" : `${e.goal} ${e.met === true ? "(met)" : e.met === false ? "(NOT met)" : ""}`
      } | ${e.notes ?? ""} |`,
  )
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? "unknown"}), Node ${process.version}`
  const markdown = `# Benchmarks\n\nMachine: ${machine}\n\n${header}\n${rows.join("\n")}\n`
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "latest.md"), markdown)
  writeFileSync(join(dir, "latest.json"), `${JSON.stringify({ machine, entries }, null, 2)}\n`)
  return markdown
}

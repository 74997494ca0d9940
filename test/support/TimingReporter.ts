/**
 * Prints, after the run, the ten test files that took longest (import, setup and tests, in their worker) and writes
 * the same lines to test-output/slowest-files.txt, which .ci/run prints again in its summary: a file that grows slow
 * is seen in every run, not found by someone timing the suite by hand.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import type { Reporter, TestModule, Vitest } from "vitest/node"

const SHOWN = 10

export default class TimingReporter implements Reporter {
  private root = process.cwd()
  private readonly files: Array<{ readonly file: string; readonly project: string; readonly ms: number }> = []

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root
  }

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic()
    const ms = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration
    this.files.push({ file: relative(this.root, module.moduleId), project: module.project.name, ms })
  }

  onTestRunEnd(): void {
    const slowest = [...this.files].sort((a, b) => b.ms - a.ms).slice(0, SHOWN)
    const lines = slowest.map(
      (f) => `${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file}${f.project === "" ? "" : `  [${f.project}]`}`,
    )
    const total = this.files.reduce((sum, f) => sum + f.ms, 0)
    lines.push(`${(total / 1000).toFixed(1).padStart(7)} s  all ${this.files.length} files added up`)
    process.stdout.write(`\nSlowest test files:\n${lines.map((l) => `  ${l}`).join("\n")}\n`)
    const out = join(this.root, "test-output")
    mkdirSync(out, { recursive: true })
    writeFileSync(join(out, "slowest-files.txt"), `${lines.join("\n")}\n`)
  }
}

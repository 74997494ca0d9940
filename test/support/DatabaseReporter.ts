/**
 * Prints, after the run, how many tests ran against each database, so a CI log shows that the postgres suites
 * really executed rather than being skipped.
 */
import type { Reporter, TestCase } from "vitest/node"

export default class DatabaseReporter implements Reporter {
  private readonly counts = new Map<string, { passed: number; failed: number; skipped: number }>()

  onTestCaseResult(testCase: TestCase): void {
    const driver = /\[(sqlite|postgres)\]/.exec(testCase.fullName)?.[1]
    if (driver === undefined) return
    const entry = this.counts.get(driver) ?? { passed: 0, failed: 0, skipped: 0 }
    const state = testCase.result().state
    if (state === "passed") entry.passed++
    else if (state === "failed") entry.failed++
    else entry.skipped++
    this.counts.set(driver, entry)
  }

  onTestRunEnd(): void {
    const lines = ["sqlite", "postgres"].map((driver) => {
      const c = this.counts.get(driver) ?? { passed: 0, failed: 0, skipped: 0 }
      return `  ${driver.padEnd(8)} ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`
    })
    process.stdout.write(`\nDatabase suites:\n${lines.join("\n")}\n`)
  }
}

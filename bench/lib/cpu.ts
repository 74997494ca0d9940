/** A process's CPU time, for benchmarks that compare CPU per request rather than latency. */
import { readFileSync } from "node:fs"

const TICK_MS = 10

/** A process's user + system CPU time so far, in ms (fields 14 and 15 of /proc/<pid>/stat, in clock ticks). */
export const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

/** A process's system CPU time so far, in ms (field 15): the kernel's share, socket writes and wake-ups mostly. */
export const sysMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return Number(fields[12]) * TICK_MS
}

/** A process's weight as Linux reports it in /proc: resident memory and CPU time. */
import { readFile } from "node:fs/promises"
import { Effect } from "effect"

/** Resident set size in MiB (VmRSS); 0 when the process is gone. */
export const rssMiB = (pid: number) =>
  Effect.promise(() =>
    readFile(`/proc/${pid}/status`, "utf8").then(
      (text) => Number(/^VmRSS:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) / 1024,
      () => 0,
    ),
  )

/**
 * Private memory in MiB (Private_Clean + Private_Dirty of smaps_rollup): what the process adds to the machine. RSS
 * also counts the pages of the `node` binary and shared libraries, which every process on a machine shares.
 */
export const privateMiB = (pid: number) =>
  Effect.promise(() =>
    readFile(`/proc/${pid}/smaps_rollup`, "utf8").then(
      (text) =>
        (Number(/^Private_Clean:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) +
          Number(/^Private_Dirty:\s+(\d+) kB/m.exec(text)?.[1] ?? 0)) /
        1024,
      () => 0,
    ),
  )

/** User plus system CPU seconds used so far (clock ticks of 1/100 s); 0 when the process is gone. */
export const cpuSeconds = (pid: number) =>
  Effect.promise(() =>
    readFile(`/proc/${pid}/stat`, "utf8").then(
      (text) => {
        // Fields after the command name, which is in parentheses and may hold spaces.
        const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
        return (Number(fields[11]) + Number(fields[12])) / 100
      },
      () => 0,
    ),
  )

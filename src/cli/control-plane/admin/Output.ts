/** What the operator commands print: aligned columns for lists, `key  value` lines for one record. */
import { Console, type Effect } from "effect"

/** Columns padded to their widest cell; an empty list prints `none`. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  if (rows.length === 0) return Console.log("none")
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd()
  return Console.log([header, ...rows].map(line).join("\n"))
}

/** One record as `key  value` lines. */
export const record = (fields: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...fields.map(([k]) => k.length))
  return Console.log(fields.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n"))
}

/** The answer as it came, pretty-printed, for `--json`. */
export const raw = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

export const labels = (value: Readonly<Record<string, string>>): string =>
  Object.entries(value)
    .map(([k, v]) => `${k}=${v}`)
    .join(",") || "-"

export const orDash = (value: string | null | undefined): string =>
  value === null || value === undefined || value === "" ? "-" : value

/** Prints the raw answer with --json, else what `text` prints. */
export const either = (json: boolean, value: unknown, text: Effect.Effect<void>) => (json ? raw(value) : text)

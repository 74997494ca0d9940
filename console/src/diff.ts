/** A line diff, for showing a change (a policy, a tool's definition) before it is approved: jsdiff's, line by line. */
import { diffLines as changes } from "diff"

export interface DiffLine {
  readonly kind: "same" | "added" | "removed"
  readonly text: string
}

/** A change's text as lines: jsdiff keeps each line's "\n", and a text's last line may have none. */
const linesOf = (value: string): ReadonlyArray<string> =>
  (value.endsWith("\n") ? value.slice(0, -1) : value).split("\n")

export const diffLines = (before: string, after: string): ReadonlyArray<DiffLine> =>
  changes(before, after).flatMap((change) => {
    const kind = change.added ? "added" : change.removed ? "removed" : "same"
    return linesOf(change.value).map((text): DiffLine => ({ kind, text }))
  })

export type Hunk = DiffLine | { readonly kind: "skipped"; readonly count: number }

/** Unchanged runs longer than twice `context` folded into a count, keeping `context` lines around each change. */
export const fold = (lines: ReadonlyArray<DiffLine>, context = 3): ReadonlyArray<Hunk> => {
  const near = lines.map((_, i) =>
    lines.slice(Math.max(0, i - context), i + context + 1).some((l) => l.kind !== "same"),
  )
  const out: Array<Hunk> = []
  let skipped = 0
  lines.forEach((line, i) => {
    if (near[i]) {
      if (skipped > 0) out.push({ kind: "skipped", count: skipped })
      skipped = 0
      out.push(line)
    } else skipped++
  })
  if (skipped > 0) out.push({ kind: "skipped", count: skipped })
  return out
}

export const hasChanges = (lines: ReadonlyArray<DiffLine>): boolean => lines.some((l) => l.kind !== "same")

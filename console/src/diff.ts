/** A line diff (longest common subsequence), for showing a policy change before it is saved. */

export interface DiffLine {
  readonly kind: "same" | "added" | "removed"
  readonly text: string
}

export const diffLines = (before: string, after: string): ReadonlyArray<DiffLine> => {
  const a = before.split("\n")
  const b = after.split("\n")
  // lengths[i][j]: length of the common subsequence of a[i..] and b[j..].
  const lengths = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      const row = lengths[i] as Array<number>
      row[j] =
        a[i] === b[j]
          ? ((lengths[i + 1] as Array<number>)[j + 1] as number) + 1
          : Math.max((lengths[i + 1] as Array<number>)[j] as number, row[j + 1] as number)
    }
  }
  const out: Array<DiffLine> = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ kind: "same", text: a[i] as string })
      i++
      j++
    } else if (
      i < a.length &&
      (j >= b.length ||
        ((lengths[i + 1] as Array<number>)[j] as number) >= ((lengths[i] as Array<number>)[j + 1] as number))
    ) {
      // Removals first, as diffs are read.
      out.push({ kind: "removed", text: a[i] as string })
      i++
    } else {
      out.push({ kind: "added", text: b[j] as string })
      j++
    }
  }
  return out
}

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

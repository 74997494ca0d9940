/** Percentiles of latency samples, and what a path adds over its baseline measured in pairs. */

export const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? Number.NaN
}

/** `p50 … ms, p99 … ms` of a set of latencies. */
export const ms = (xs: ReadonlyArray<number>) =>
  `p50 ${percentile(xs, 0.5).toFixed(3)} ms, p99 ${percentile(xs, 0.99).toFixed(3)} ms`

/**
 * What a path adds, from samples taken in pairs (each `path[i]` right before or after its `base[i]`): the
 * percentiles of the per-pair differences. p99 − p99 of two separate distributions would pair a slow sample of one
 * with a slow sample of the other that happened at another moment; the difference of each pair is what the path
 * added to that request while the machine was as busy as for its baseline.
 */
export const added = (path: ReadonlyArray<number>, base: ReadonlyArray<number>) => {
  if (path.length !== base.length) throw new Error("samples are not paired")
  const differences = path.map((x, i) => x - (base[i] ?? Number.NaN))
  return { p50: percentile(differences, 0.5), p99: percentile(differences, 0.99) }
}

/** `added per pair p50 …, p99 … ms`. */
export const addedText = (path: ReadonlyArray<number>, base: ReadonlyArray<number>) => {
  const a = added(path, base)
  return `added per pair p50 ${a.p50.toFixed(3)} ms, p99 ${a.p99.toFixed(3)} ms`
}

/** MiB/s of 1 MiB exchanges, from the ms each took. */
export const mibps = (samplesMs: ReadonlyArray<number>, mib = 1) =>
  (samplesMs.length * mib) / (samplesMs.reduce((a, b) => a + b, 0) / 1000)

/** Reading Prometheus text in tests. */

/**
 * The value of one series in a scrape, named as it is written: `process_cpu_seconds_total`, or with its labels,
 * `mesh_control_plane_bootstrap_tokens{state="active"}`. Undefined when the scrape has no such series.
 */
export const seriesValue = (text: string, series: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

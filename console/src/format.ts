/** How times, ids and counts read on the page. */

const units: ReadonlyArray<readonly [Intl.RelativeTimeFormatUnit, number]> = [
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1_000],
]

const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" })

/** "3 hours ago", "in 20 minutes". */
export const fromNow = (iso: string, now: number = Date.now()): string => {
  const delta = Date.parse(iso) - now
  for (const [unit, ms] of units) {
    if (Math.abs(delta) >= ms || unit === "second") return relative.format(Math.round(delta / ms), unit)
  }
  return iso
}

const absoluteFormat = new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "medium" })

/** "Jun 1, 2026, 10:04:05 AM", in the browser's time zone. */
export const absolute = (iso: string): string => absoluteFormat.format(new Date(iso))

/** `12D3KooWAbCd…xYz123`: enough of a peer id to tell peers apart; the whole id is in the title and copy. */
export const shortId = (id: string): string => (id.length > 20 ? `${id.slice(0, 12)}…${id.slice(-6)}` : id)

export const plural = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`

export const labelPairs = (labels: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)

/** The role without its `mesh:role:` prefix, which every built-in role carries. */
export const roleName = (role: string): string => role.replace(/^mesh:role:/, "")

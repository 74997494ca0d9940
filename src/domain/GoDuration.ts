/**
 * Go-style duration text (`24h`, `15m`, `1h30m`, `300ms`, `0`), the syntax operators know from the reference system's
 * flags. Parsed into an Effect `Duration`; formatted back for help texts and logs.
 */
import { Duration, Either } from "effect"

const unitMillis: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
}

const segment = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/

/** Parses Go duration text; negative durations are refused because no flag of ours means anything by them. */
export const parse = (text: string): Either.Either<Duration.Duration, string> => {
  const input = text.trim()
  if (input === "0") return Either.right(Duration.zero)
  if (input.length === 0) return Either.left("empty duration")
  if (input.startsWith("-")) return Either.left(`negative duration "${text}"`)
  let rest = input.startsWith("+") ? input.slice(1) : input
  let millis = 0
  while (rest.length > 0) {
    const match = segment.exec(rest)
    if (match === null) {
      return Either.left(`invalid duration "${text}" (use Go syntax such as 30s, 15m, 1h30m, 0)`)
    }
    const [whole, amount, unit] = match as unknown as [string, string, string]
    millis += Number(amount) * (unitMillis[unit] ?? 0)
    rest = rest.slice(whole.length)
  }
  return Either.right(Duration.millis(millis))
}

/** Formats a duration the way Go prints it (`1h30m0s`), with `0s` for zero. */
export const format = (duration: Duration.DurationInput): string => {
  let millis = Math.round(Duration.toMillis(duration))
  if (millis === 0) return "0s"
  const hours = Math.floor(millis / 3_600_000)
  millis -= hours * 3_600_000
  const minutes = Math.floor(millis / 60_000)
  millis -= minutes * 60_000
  const seconds = millis / 1_000
  if (hours === 0 && minutes === 0 && seconds < 1) return `${millis}ms`
  return `${hours > 0 ? `${hours}h` : ""}${hours > 0 || minutes > 0 ? `${minutes}m` : ""}${seconds}s`
}

/**
 * `--check` of every program: the flags, files and configuration are read and checked as a start would, then what
 * would run is printed (never a secret: a token is "given" or not, a database URL loses its password) and the
 * program exits, 0 when all is well and 2 (with the one-line reason) when not, as headscale's configtest does.
 */
import * as Options from "@effect/cli/Options"
import { Console, Duration, Option, Redacted } from "effect"
import type { ListenAddress } from "../config/ControlPlaneConfig.js"
import type { DatabaseConfig } from "../config/DatabaseConfig.js"

export const flag = Options.boolean("check").pipe(
  Options.withDescription(
    "Check the flags, files and configuration, print what would run (no secrets) and exit: 0 if all is well, 2 if not. Starts nothing.",
  ),
)

export type Field = readonly [string, string]

/** The report: `<program>: configuration OK`, then one `key  value` line each. */
export const report = (program: string, fields: ReadonlyArray<Field>) => {
  const width = Math.max(...fields.map(([k]) => k.length))
  return Console.log(
    [`${program}: configuration OK`, ...fields.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join("\n"),
  )
}

export const address = (a: ListenAddress): string =>
  a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`

export const optional = <A>(value: Option.Option<A>, show: (a: A) => string, none = "none"): string =>
  Option.match(value, { onNone: () => none, onSome: show })

export const secret = (value: Option.Option<Redacted.Redacted<string>>, source: string): string =>
  Option.isSome(value) ? `given (${source})` : "none"

export const duration = (d: Duration.Duration): string => (Duration.isZero(d) ? "0" : Duration.format(d))

export const list = (values: ReadonlyArray<string>): string => (values.length === 0 ? "none" : values.join(", "))

/** A sqlite path as is; a postgres URL without its password. */
export const database = (config: DatabaseConfig): string => {
  const dsn = Redacted.value(config.dsn)
  if (config.driver === "sqlite") return `sqlite ${dsn}`
  if (!URL.canParse(dsn)) return "postgres (a connection string that is not a URL)"
  const url = new URL(dsn)
  if (url.password !== "") url.password = "***"
  return `postgres ${url.toString()}`
}

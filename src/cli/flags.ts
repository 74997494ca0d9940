/**
 * Flag constructors shared by the mesh commands. Each flag may also come from an environment variable, and bad
 * values fail with a one-line reason naming the flag.
 */
import { readFile } from "node:fs/promises"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { Config, Effect, Either, LogLevel, Option, Redacted } from "effect"
import * as GoDuration from "../domain/GoDuration.js"
import { UsageError } from "./run.js"

const invalid = (message: string) => ValidationError.invalidValue(HelpDoc.p(message))

const describe = (text: string, env: string, fallback?: string) =>
  `${text}${fallback === undefined || fallback === "" ? "" : ` Default: ${fallback}.`} Env: ${env}.`

/** What the usage line shows for a flag's value, from its name, unless the flag says. */
const placeholderFor = (name: string): string => {
  if (/(-path|^config|^tls-cert|^tls-key|^tls-ca)$/.test(name)) return "file"
  if (/-dir$/.test(name)) return "dir"
  if (/^(control-plane|issuer)$/.test(name)) return "url"
  if (/^(listen|external-addr)$/.test(name)) return "multiaddr"
  if (/(-addr|-address)$/.test(name)) return "host:port"
  return "text"
}

const named = (name: string, placeholder?: string) =>
  Options.text(name).pipe(Options.withPseudoName(placeholder ?? placeholderFor(name)))

/** A text flag with an environment fallback and a default. */
export const text = (
  name: string,
  options: { env: string; fallback: string; description: string; placeholder?: string },
) =>
  named(name, options.placeholder).pipe(
    Options.withFallbackConfig(Config.string(options.env)),
    Options.withDefault(options.fallback),
    Options.withDescription(describe(options.description, options.env, options.fallback)),
  )

/** A text flag with an environment fallback and no default. */
export const optionalText = (name: string, options: { env: string; description: string; placeholder?: string }) =>
  named(name, options.placeholder).pipe(
    Options.withFallbackConfig(Config.string(options.env)),
    Options.optional,
    // An empty value (MESH_X= in the environment) means unset.
    Options.map(Option.filter((value: string) => value.trim().length > 0)),
    Options.withDescription(describe(options.description, options.env)),
  )

/** A text flag with an environment fallback and no default, where an empty value is a value (e.g. "disable"). */
export const optionalAllowEmpty = (name: string, options: { env: string; description: string }) =>
  named(name).pipe(
    Options.withFallbackConfig(Config.string(options.env)),
    Options.optional,
    Options.withDescription(describe(options.description, options.env)),
  )

export const boolean = (name: string, options: { env: string; description: string }) =>
  Options.boolean(name).pipe(
    Options.withFallbackConfig(Config.boolean(options.env)),
    Options.withDescription(describe(options.description, options.env, "false")),
  )

/** A non-negative integer. */
export const integer = (name: string, options: { env: string; fallback: number; description: string }) =>
  text(name, { ...options, fallback: String(options.fallback), placeholder: "n" }).pipe(
    Options.mapEffect((value) =>
      /^\d+$/.test(value.trim()) && Number.isSafeInteger(Number(value))
        ? Effect.succeed(Number(value))
        : Effect.fail(invalid(`--${name}: "${value}" is not a non-negative integer`)),
    ),
  )

/** Go-style duration text (`24h`, `15m`, `0`). */
export const duration = (name: string, options: { env: string; fallback: string; description: string }) =>
  text(name, { ...options, placeholder: "duration" }).pipe(
    Options.mapEffect((value) =>
      Either.match(GoDuration.parse(value), {
        onLeft: (reason) => Effect.fail(invalid(`--${name}: ${reason}`)),
        onRight: Effect.succeed,
      }),
    ),
  )

/** One of a fixed set of words; the error names the flag and the accepted words. */
export const choice = <const A extends string>(
  name: string,
  choices: ReadonlyArray<A>,
  options: { env: string; fallback: A; description: string },
) =>
  text(name, {
    ...options,
    description: `${options.description} One of: ${choices.join(", ")}.`,
    placeholder: choices.join("|"),
  }).pipe(
    Options.mapEffect((value) =>
      (choices as ReadonlyArray<string>).includes(value)
        ? Effect.succeed(value as A)
        : Effect.fail(invalid(`--${name}: "${value}" is not one of ${choices.join(", ")}`)),
    ),
  )

/**
 * A repeatable flag; its environment fallback (comma-separated) is read by the command, as @effect/cli has none.
 * The empty default puts it in brackets on the usage line: it may be left out.
 */
export const repeatable = (name: string, env: string, description: string) =>
  named(name).pipe(
    Options.repeated,
    Options.withDefault([] as Array<string>),
    Options.withDescription(`${description} Repeatable. Env: ${env} (comma-separated).`),
  )

/** The values of a repeatable flag, else of its environment variable, else the default. */
export const repeatedOr = (given: ReadonlyArray<string>, env: string, fallback: ReadonlyArray<string>) =>
  given.length > 0
    ? Effect.succeed(given)
    : Config.string(env).pipe(
        Config.map(list),
        Config.withDefault([] as ReadonlyArray<string>),
        Effect.map((values) => (values.length > 0 ? values : fallback)),
        Effect.orElseSucceed(() => fallback),
      )

/** Comma-separated values, empties dropped. */
export const list = (value: string): ReadonlyArray<string> =>
  value
    .split(",")
    .map((v) => v.trim())
    .filter((v) => v.length > 0)

export const logLevel = choice("log-level", ["debug", "info", "warn", "error"], {
  env: "MESH_LOG_LEVEL",
  fallback: "info",
  description: "Minimum level of log lines; LOG_FORMAT=json selects JSON output.",
}).pipe(Options.map((level) => LogLevel.fromLiteral(level === "warn" ? "Warning" : capitalize(level))))

const capitalize = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}` as "Debug" | "Info" | "Error"

/** host:port, `:port` for all interfaces, or `[v6]:port`. */
export const parseListenAddress = (
  flag: string,
  value: string,
): Either.Either<{ host: string; port: number }, string> => {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim())
  const port = match === null ? Number.NaN : Number(match[3])
  if (match === null || !Number.isInteger(port) || port > 65535) {
    return Either.left(`--${flag}: "${value}" is not host:port`)
  }
  const host = match[1] ?? match[2] ?? ""
  return Either.right({ host: host.length === 0 ? "0.0.0.0" : host, port })
}

export const listenAddress = (name: string, options: { env: string; fallback: string; description: string }) =>
  text(name, options).pipe(
    Options.mapEffect((value) =>
      Either.match(parseListenAddress(name, value), {
        onLeft: (reason) => Effect.fail(invalid(reason)),
        onRight: Effect.succeed,
      }),
    ),
  )

/**
 * A secret named by a `--*-path` flag (file content, trailing newline trimmed) or else held by an environment variable.
 * The value stays Redacted from here on, so it cannot reach a log line by accident.
 */
export const readSecret = (path: Option.Option<string>, env: string) =>
  Option.match(path, {
    onSome: (file) => Effect.map(readSecretFile(file), Option.some),
    onNone: () =>
      Config.option(Config.string(env)).pipe(
        Effect.map(Option.flatMap((value) => nonEmpty(value.trim()))),
        Effect.orElseSucceed(() => Option.none()),
      ),
  })

/**
 * The trimmed content of a secret file. An unreadable or empty file is a flag error naming the file, never its
 * content: a path was given to supply a secret, and quietly running without one (an admin API turned off, a join
 * without its token) would hide the mistake.
 */
export const readSecretFile = (file: string): Effect.Effect<Redacted.Redacted<string>, UsageError> =>
  Effect.tryPromise({
    try: () => readFile(file, "utf8"),
    catch: (cause) =>
      new UsageError({ message: `cannot read ${file}: ${(cause as NodeJS.ErrnoException).code ?? "error"}` }),
  }).pipe(
    Effect.flatMap((content) =>
      Option.match(nonEmpty(content.trim()), {
        onNone: () => Effect.fail(new UsageError({ message: `${file} is empty: it must hold the secret` })),
        onSome: Effect.succeed,
      }),
    ),
  )

/** A secret given directly (a flag or env value): Redacted from here on. */
export const redact = (value: string): Redacted.Redacted<string> => Redacted.make(value.trim())

const nonEmpty = (value: string): Option.Option<Redacted.Redacted<string>> =>
  value.length === 0 ? Option.none() : Option.some(Redacted.make(value))

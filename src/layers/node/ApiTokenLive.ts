/**
 * The API token: checked in constant time, and found or made at start. Precedence: `--api-token-path`, then
 * `MESH_API_TOKEN`, then `<data-dir>/api-token`, which is created (0600, 256 random bits) on first run. The token is
 * written to that file and nowhere else: never a log line, never stdout.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Data, Effect, Layer, Option, Redacted } from "effect"
import { defaults, NodeConfig } from "../../config/NodeConfig.js"
import { ApiToken } from "../../services/node/ApiToken.js"

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

export const make = (token: Redacted.Redacted<string>) => {
  const expected = digest(Redacted.value(token))
  return ApiToken.of({ matches: (presented) => timingSafeEqual(digest(presented), expected) })
}

export const layer = Layer.effect(
  ApiToken,
  Effect.map(NodeConfig, (settings) => make(settings.apiToken)),
)

export class ApiTokenError extends Data.TaggedError("ApiTokenError")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

export interface ResolvedToken {
  readonly token: Redacted.Redacted<string>
  /** The file it came from or was written to; none when it came from the environment. */
  readonly path: Option.Option<string>
}

const MIN_LENGTH = 16

const readToken = (path: string) =>
  Effect.try({
    try: () => readFileSync(path, "utf8").trim(),
    catch: (cause) =>
      new ApiTokenError({ reason: `cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}` }),
  }).pipe(
    Effect.filterOrFail(
      (text) => text.length >= MIN_LENGTH,
      () => new ApiTokenError({ reason: `${path} holds no API token of at least ${MIN_LENGTH} characters` }),
    ),
    Effect.map(Redacted.make),
  )

/** Finds the API token, creating `<data-dir>/api-token` when nothing else names one. */
export const resolve = (options: {
  readonly path: Option.Option<string>
  readonly fromEnvironment: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
}): Effect.Effect<ResolvedToken, ApiTokenError> => {
  if (Option.isSome(options.path)) {
    const path = options.path.value
    return Effect.map(readToken(path), (token) => ({ token, path: Option.some(path) }))
  }
  if (Option.isSome(options.fromEnvironment)) {
    const token = options.fromEnvironment.value
    return Redacted.value(token).length >= MIN_LENGTH
      ? Effect.succeed({ token, path: Option.none() })
      : Effect.fail(new ApiTokenError({ reason: `MESH_API_TOKEN must be at least ${MIN_LENGTH} characters` }))
  }
  const path = join(options.dataDir, defaults.apiTokenFile)
  if (existsSync(path)) return Effect.map(readToken(path), (token) => ({ token, path: Option.some(path) }))
  return Effect.try({
    try: () => {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      const token = `mesh-api-${randomBytes(32).toString("hex")}`
      // `wx`: two nodes starting on one folder never overwrite each other's token.
      writeFileSync(path, `${token}\n`, { mode: 0o600, flag: "wx" })
      chmodSync(path, 0o600)
      return { token: Redacted.make(token), path: Option.some(path) }
    },
    catch: (cause) =>
      new ApiTokenError({ reason: `cannot create ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}` }),
  })
}

/**
 * The definitions a node holds tools against, in `<data-dir>/tool-definitions.json` (0600): per
 * `mcp://<service>/<tool>`, the canonical text by fingerprint, so a drift report can carry the old definition beside
 * the new one. Bounded: at most MAX_PER_TOOL definitions a tool (the newest kept), MAX_BYTES in all (counted in
 * UTF-16 units; past it no new one is kept), none over ToolDrift.MAX_DEFINITION_BYTES. Written whole (a temporary file renamed over it) when one
 * is added; a file that cannot be read is set aside and the node starts again: a report then lacks the old text.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, Schema } from "effect"

export const FILE = "tool-definitions.json"
/** A policy approves a few definitions of a tool at once (a rollout); more are history. */
export const MAX_PER_TOOL = 4
export const MAX_BYTES = 16 * 1024 * 1024

const FileSchema = Schema.Struct({
  version: Schema.Literal(1),
  definitions: Schema.Record({
    key: Schema.String,
    value: Schema.Record({ key: Schema.String, value: Schema.String }),
  }),
})

/** Per tool, fingerprint to canonical text, in the order they were kept. */
export type Definitions = ReadonlyMap<string, ReadonlyMap<string, string>>

export const pathIn = (dataDir: string): string => join(dataDir, FILE)

export const sizeOf = (definitions: Definitions): number => {
  let total = 0
  for (const byFingerprint of definitions.values()) for (const text of byFingerprint.values()) total += text.length
  return total
}

export const load = (dataDir: string): Effect.Effect<Definitions> =>
  Effect.gen(function* () {
    const path = pathIn(dataDir)
    if (!existsSync(path)) return new Map()
    const parsed = Either.flatMap(
      Either.try(() => JSON.parse(readFileSync(path, "utf8")) as unknown),
      (json) => Schema.decodeUnknownEither(FileSchema)(json),
    )
    if (Either.isRight(parsed)) {
      return new Map(
        Object.entries(parsed.right.definitions).map(([tool, byFingerprint]) => [
          tool,
          new Map(Object.entries(byFingerprint)),
        ]),
      )
    }
    yield* Effect.logWarning("tool definitions file unreadable; set aside").pipe(Effect.annotateLogs({ file: path }))
    yield* Effect.try(() => renameSync(path, `${path}.unreadable`)).pipe(Effect.ignore)
    return new Map()
  })

/** `definitions` with `text` kept for (tool, fingerprint), or undefined when it is known already or does not fit. */
export const add = (
  definitions: Definitions,
  tool: string,
  fingerprint: string,
  text: string,
): Definitions | undefined => {
  const current = definitions.get(tool)
  if (current?.has(fingerprint) === true) return undefined
  if (text === "" || sizeOf(definitions) + text.length > MAX_BYTES) return undefined
  const entries = [...(current ?? new Map<string, string>()), [fingerprint, text] as const].slice(-MAX_PER_TOOL)
  const next = new Map(definitions)
  next.set(tool, new Map(entries))
  return next
}

export const save = (dataDir: string, definitions: Definitions): Effect.Effect<void> =>
  Effect.try(() => {
    const path = pathIn(dataDir)
    const temporary = `${path}.${process.pid}.tmp`
    const body = {
      version: 1,
      definitions: Object.fromEntries(
        [...definitions]
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([tool, byFingerprint]) => [tool, Object.fromEntries(byFingerprint)]),
      ),
    }
    writeFileSync(temporary, `${JSON.stringify(body)}\n`, { mode: 0o600 })
    renameSync(temporary, path)
  }).pipe(Effect.catchAll((error) => Effect.logWarning("tool definitions not saved", error)))

/**
 * The node's first-use pins, in `<data-dir>/tool-pins.json`: per `mcp://<service>/<tool>`, the fingerprint of the
 * first definition this node saw and the peer it came from. Read once at start, written whole (a temporary file
 * renamed over it, 0600) whenever a pin is taken. A file that cannot be read as pins is set aside
 * (`tool-pins.json.unreadable`) and pinning starts again: a lost pin re-pins, it never grants more than first use did.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, Schema } from "effect"
import * as ToolFingerprint from "../../domain/ToolFingerprint.js"

export const FILE = "tool-pins.json"
/** Past this many tools, no new pin is taken (a warning says so); a mesh's tools are far fewer. */
export const MAX_PINS = 10_000

const Entry = Schema.Struct({
  fingerprint: Schema.String.pipe(Schema.filter(ToolFingerprint.isFingerprint)),
  peer: Schema.String,
  at: Schema.Number,
})
export type Entry = typeof Entry.Type

const FileSchema = Schema.Struct({
  version: Schema.Literal(1),
  pins: Schema.Record({ key: Schema.String, value: Entry }),
})

export type Pins = ReadonlyMap<string, Entry>

export const pathIn = (dataDir: string): string => join(dataDir, FILE)

export const load = (dataDir: string): Effect.Effect<Pins> =>
  Effect.gen(function* () {
    const path = pathIn(dataDir)
    if (!existsSync(path)) return new Map()
    const parsed = Either.flatMap(
      Either.try(() => JSON.parse(readFileSync(path, "utf8")) as unknown),
      (json) => Schema.decodeUnknownEither(FileSchema)(json),
    )
    if (Either.isRight(parsed)) return new Map(Object.entries(parsed.right.pins))
    yield* Effect.logWarning("tool pins file unreadable; set aside, pinning starts again").pipe(
      Effect.annotateLogs({ file: path }),
    )
    yield* Effect.try(() => renameSync(path, `${path}.unreadable`)).pipe(Effect.ignore)
    return new Map()
  })

export const save = (dataDir: string, pins: Pins): Effect.Effect<void> =>
  Effect.try(() => {
    const path = pathIn(dataDir)
    const temporary = `${path}.${process.pid}.tmp`
    const body = { version: 1, pins: Object.fromEntries([...pins].sort(([a], [b]) => (a < b ? -1 : 1))) }
    writeFileSync(temporary, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 })
    renameSync(temporary, path)
  }).pipe(Effect.catchAll((error) => Effect.logWarning("tool pins not saved", error)))

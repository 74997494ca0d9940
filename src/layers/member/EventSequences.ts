/**
 * The sequence of the last mesh event applied per subject, kept across restarts in the data folder
 * (`event-sequences.json`, 0600, written whole and renamed into place): a captured event replayed after a restart is
 * as old as it was before. Without a data folder (tests, throwaway members) nothing is kept. A file that cannot be
 * read or decoded is logged and replaced at the next event: events are still checked against their signature and
 * clock, and the worst a lost file reopens is a replay within the five minutes an event is accepted.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, Option, Schema } from "effect"

export const FILE = "event-sequences.json"
/** Subjects kept: one per peer ever banned, the key rotations, the policy. Past it the oldest entries go. */
const MAX_SUBJECTS = 100_000

const SequencesFile = Schema.Record({ key: Schema.String, value: Schema.Int })
const decodeFile = Schema.decodeUnknownEither(Schema.parseJson(SequencesFile))

export interface EventSequences {
  readonly load: Effect.Effect<ReadonlyMap<string, number>>
  readonly save: (latest: ReadonlyMap<string, number>) => Effect.Effect<void>
}

export const make = (dataDir: Option.Option<string>): EventSequences => {
  if (Option.isNone(dataDir)) return { load: Effect.succeed(new Map()), save: () => Effect.void }
  const path = join(dataDir.value, FILE)
  const load = Effect.suspend(() => {
    if (!existsSync(path)) return Effect.succeed(new Map<string, number>())
    const decoded = Either.flatMap(
      Either.try(() => readFileSync(path, "utf8")),
      (text) => decodeFile(text),
    )
    return Either.isRight(decoded)
      ? Effect.succeed(new Map(Object.entries(decoded.right)))
      : Effect.as(
          Effect.logWarning("the last applied mesh event sequences could not be read; starting afresh").pipe(
            Effect.annotateLogs({ file: path }),
          ),
          new Map<string, number>(),
        )
  })
  const save = (latest: ReadonlyMap<string, number>) =>
    Effect.try(() => {
      const entries = [...latest.entries()].slice(-MAX_SUBJECTS)
      const temporary = `${path}.tmp`
      writeFileSync(temporary, JSON.stringify(Object.fromEntries(entries)), { mode: 0o600 })
      chmodSync(temporary, 0o600)
      renameSync(temporary, path)
    }).pipe(
      Effect.catchAll((error) =>
        Effect.logWarning("the last applied mesh event sequences could not be saved").pipe(
          Effect.annotateLogs({ file: path, reason: String(error.error).slice(0, 200) }),
        ),
      ),
    )
  return { load, save }
}

/**
 * KeyRing over SQL. At start the first key is made if there is none. A fiber wakes when the next rotation is due,
 * tries to win the rotation and re-reads the keys; after a failed attempt it re-reads them and the shared due time
 * within seconds. Replicas must share the rotation settings. Winning is a conditional update of the single
 * `key_rotation` row inside the rotation's own transaction, so replicas on one database rotate exactly once per
 * interval and none sees a half-made rotation.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Duration, Effect, Layer, Option, PubSub, Ref, Schedule, Schema, Stream } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import * as Ed25519 from "../../crypto/Ed25519.js"
import * as KeySet from "../../domain/KeySet.js"
import { KeyRing, type KeySnapshot, liveAt, type StoredKey } from "../../services/identity/KeyRing.js"
import { SqlBytes, toBlob } from "../sql/Columns.js"

/** Pause after a failed check (the database may be down) before the next one. */
const RETRY_AFTER = Duration.seconds(5)
/** How long a signed /keys body is served before it is signed afresh (clients accept five minutes). */
const RESIGN_AFTER_MS = 60_000

const KeyRow = Schema.Struct({
  id: Schema.Number,
  private_key: SqlBytes,
  public_key: SqlBytes,
  created_at: Schema.Number,
  expires_at: Schema.NullOr(Schema.Number),
})

const toStored = (row: typeof KeyRow.Type): StoredKey => ({
  id: row.id,
  seed: new Uint8Array(row.private_key),
  publicKey: new Uint8Array(row.public_key),
  createdAt: row.created_at,
  expiresAt: row.expires_at ?? undefined,
})

interface Loaded {
  readonly keys: ReadonlyArray<StoredKey>
  /** The shared due time of the next rotation; undefined when rotation is off. */
  readonly nextRotationAt: number | undefined
}

const makeSnapshot = (loaded: Loaded, now: number, grace: number): KeySnapshot => {
  const live = liveAt(loaded.keys, now)
  const current = live.filter((k) => k.expiresAt === undefined).sort((a, b) => b.id - a.id)[0] ?? live[0]
  if (current === undefined) throw new Error("KeyRing has no live key")
  const byId = new Map(live.map((k) => [k.id, k.publicKey]))
  const currentRetiresAt = loaded.nextRotationAt === undefined ? undefined : loaded.nextRotationAt + grace
  return { current, currentRetiresAt, live, publicKeyFor: (id) => byId.get(id) }
}

export const layer = Layer.scoped(
  KeyRing,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ControlPlaneConfig
    const interval = Duration.toMillis(config.keyRotationInterval)
    const grace = Duration.toMillis(config.keyGracePeriod)

    const selectKeys = SqlSchema.findAll({
      Request: Schema.Void,
      Result: KeyRow,
      execute: () => sql`SELECT id, private_key, public_key, created_at, expires_at FROM signing_keys ORDER BY id`,
    })
    const insertKey = (now: number) => {
      const pair = Ed25519.generate()
      return sql`INSERT INTO signing_keys ${sql.insert({
        private_key: toBlob(pair.seed),
        public_key: toBlob(pair.publicKey),
        created_at: now,
        expires_at: null,
      })}`
    }

    // First start: seed the rotation row and the first key, once, whatever other replicas do at the same moment.
    const initialize = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO key_rotation (id, next_rotation_at) VALUES (1, ${interval > 0 ? now + interval : 0})
        ON CONFLICT (id) DO NOTHING`
      // Serializes concurrent initializers on the row before looking for a current key.
      yield* sql`UPDATE key_rotation SET next_rotation_at = next_rotation_at WHERE id = 1`
      const current = yield* sql`SELECT id FROM signing_keys WHERE expires_at IS NULL`
      if (current.length === 0) yield* insertKey(now)
    }).pipe(sql.withTransaction)

    const rotate = (now: number) =>
      Effect.gen(function* () {
        const won = yield* sql`UPDATE key_rotation SET next_rotation_at = ${now + interval}
          WHERE id = 1 AND next_rotation_at <= ${now} RETURNING id`
        if (won.length === 0) return false
        yield* sql`UPDATE signing_keys SET expires_at = ${now + grace} WHERE expires_at IS NULL`
        yield* insertKey(now)
        yield* sql`DELETE FROM signing_keys WHERE expires_at IS NOT NULL AND expires_at <= ${now}`
        return true
      }).pipe(sql.withTransaction)

    const loaded = yield* Ref.make<Loaded>({ keys: [], nextRotationAt: undefined })
    const rotationHub = yield* PubSub.unbounded<{
      readonly current: StoredKey
      readonly previous: StoredKey | undefined
    }>()
    const nextRotation = Effect.gen(function* () {
      if (interval <= 0) return Option.none<number>()
      const rows = yield* sql<{ next_rotation_at: number }>`SELECT next_rotation_at FROM key_rotation WHERE id = 1`
      return Option.fromNullable(rows[0]?.next_rotation_at).pipe(Option.map(Number))
    }).pipe(Effect.orDie)

    const reload = Effect.zip(selectKeys(), nextRotation).pipe(
      Effect.flatMap(([rows, due]) =>
        Ref.set(loaded, { keys: rows.map(toStored), nextRotationAt: Option.getOrUndefined(due) }),
      ),
      Effect.orDie,
      Effect.withSpan("KeyRing.reload"),
    )

    const rotateIfDue = Effect.gen(function* () {
      if (interval <= 0) return false
      const now = yield* Clock.currentTimeMillis
      const rotated = yield* rotate(now).pipe(Effect.orDie)
      const before = yield* snapshot
      // Re-read whether or not this replica won: another one may have rotated.
      yield* reload
      if (rotated) {
        const after = yield* snapshot
        yield* Effect.logInfo("signing key rotated").pipe(Effect.annotateLogs({ key_id: after.current.id }))
        yield* PubSub.publish(rotationHub, { current: after.current, previous: before.current })
      }
      return rotated
    }).pipe(Effect.withSpan("KeyRing.rotateIfDue"))

    const snapshot = Effect.zipWith(Ref.get(loaded), Clock.currentTimeMillis, (state, now) =>
      makeSnapshot(state, now, grace),
    )

    /** The live keys with the time each retires, as /keys tells members. */
    const withRetirement = (snap: KeySnapshot) =>
      snap.live.map((k) => ({
        ...k,
        retiresAt: k.expiresAt ?? (k === snap.current ? snap.currentRetiresAt : undefined),
      }))

    /**
     * The last signed body, with the loaded keys it was made from and the instant until which it stays right for
     * them: its re-signing age, or the first grace deadline to pass (a key leaving the set). Within that, a request
     * (every member polls /keys) is one comparison, not a snapshot.
     */
    const signed = yield* Ref.make<
      | {
          readonly ids: string
          readonly at: number
          readonly body: Uint8Array
          readonly from: Loaded
          readonly validUntil: number
        }
      | undefined
    >(undefined)
    const keysBody = Effect.gen(function* () {
      const last = yield* Ref.get(signed)
      const state = yield* Ref.get(loaded)
      const now = yield* Clock.currentTimeMillis
      if (last !== undefined && last.from === state && now >= last.at && now < last.validUntil) return last.body
      const keys = withRetirement(makeSnapshot(state, now, grace))
      const ids = keys.map((k) => `${k.id}:${k.retiresAt ?? 0}`).join(",")
      const reuse = last !== undefined && last.ids === ids && now - last.at < RESIGN_AFTER_MS && now >= last.at
      const at = reuse ? last.at : now
      const body = reuse ? last.body : KeySet.sign(keys, now)
      const validUntil = Math.min(
        at + RESIGN_AFTER_MS,
        ...state.keys.flatMap((k) => (k.expiresAt !== undefined && k.expiresAt > now ? [k.expiresAt] : [])),
      )
      yield* Ref.set(signed, { ids, at, body, from: state, validUntil })
      return body
    })

    yield* initialize.pipe(Effect.orDie)
    yield* reload

    // The rotation loop: re-read the keys, sleep until the rotation is due, try it, re-read. Every replica reads the
    // same due time from the database, so all of them wake together; the losers re-read after the winner's transaction
    // committed. A replica whose attempt failed (the database erred while another replica rotated) retries soon, and
    // each pass starts by re-reading the keys and the shared due time: it never sleeps an interval on stale keys.
    const loop = Effect.gen(function* () {
      yield* reload
      const due = yield* nextRotation
      // The clock is read after the database, right before sleeping: a clock that moved during the query (a
      // TestClock adjusted meanwhile) would otherwise make the sleep end a whole interval late.
      const now = yield* Clock.currentTimeMillis
      if (Option.isSome(due) && due.value > now) yield* Effect.sleep(Duration.millis(due.value - now))
      yield* rotateIfDue
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("key rotation check failed; retrying", cause).pipe(
          Effect.zipRight(Effect.sleep(RETRY_AFTER)),
        ),
      ),
      Effect.repeat(Schedule.forever),
    )
    if (interval > 0) yield* Effect.forkScoped(loop)

    return { snapshot, keysBody, rotateIfDue, reload, nextRotation, rotations: Stream.fromPubSub(rotationHub) }
  }),
)

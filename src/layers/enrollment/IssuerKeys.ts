/**
 * One OIDC issuer's signing keys: read from its discovery document and JWKS, and kept fresh by a fiber of the
 * layer's scope, on the rules of `domain/IssuerKeySchedule.ts`. Every read happens in that fiber, one at a time:
 *
 * - scheduled: before the keys' lifetime ends (no token waits on it), and as retries after a failed read;
 * - asked for by a token: when nothing usable is held (first use, or keys expired), or when the token's key id is
 *   unknown. Such a token waits, READ_WAIT at most, for a read that starts after it asked, so a key the issuer has
 *   just published is found however many tokens asked before. Everyone who asks before a read starts shares it (one
 *   Deferred), and reads come out of a token bucket: a flood of made-up key ids costs the issuer a few reads and then
 *   one a second, and costs us a fiber per request waiting on that one Deferred, for a second or so. The waiters are
 *   not counted or capped: a cap that a flood fills would refuse the genuine token it is there to let through;
 *   the requests themselves are bounded by the listener and `--enroll-rate-limit`.
 *
 * A failed read keeps the keys (stale): tokens under known keys still verify, and readiness, metrics and the log say
 * so, until the stale limit, past which the keys are no longer used. The first read waits for the first token naming
 * the issuer, so an issuer nobody uses is never asked.
 */
import { Clock, Data, Deferred, Duration, Effect, Either, Exit, Queue, Ref, Schema, type Scope } from "effect"
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose"
import { Unavailable } from "../../domain/Errors.js"
import * as KeySchedule from "../../domain/IssuerKeySchedule.js"
import * as HttpGet from "../../http/HttpGet.js"
import * as OidcDiscovery from "../../http/OidcDiscovery.js"
import type { IssuerKeysStatus } from "../../services/enrollment/Oidc.js"
import type { Counter } from "../../services/operations/Metrics.js"

/** The longest a token waits for a read of the keys: a read under way, the bucket's next read, and that read. */
export const READ_WAIT = Duration.seconds(5)

export interface IssuerKeys {
  /** The keys to verify with: those held unless expired, else those of a read asked for now. */
  readonly current: Effect.Effect<JWTVerifyGetKey, Unavailable>
  /** The keys of a read that starts after this call: a token named a key id the current keys lack. */
  readonly fresher: Effect.Effect<JWTVerifyGetKey, Unavailable>
  readonly status: Effect.Effect<IssuerKeysStatus>
}

export interface Options {
  /** As configured: the issuer's identity. */
  readonly issuer: string
  readonly maxAge: Duration.Duration
  readonly http: HttpGet.Options
  /** `mesh_control_plane_oidc_keys_reads_total`, by issuer, reason and outcome. */
  readonly reads: Counter
}

interface Keys extends KeySchedule.Held {
  readonly keySet: JWTVerifyGetKey
}

interface State {
  readonly keys: Keys | undefined
  /** From the discovery document, kept until a read fails (the issuer may have moved its keys). */
  readonly jwksUri: string | undefined
  /** Failed reads since the last good one. */
  readonly failures: number
  readonly lastFailureMs: number | undefined
  readonly problem: string | undefined
}

/** The read the next askers get: whoever takes `done` before the reader swaps it out is served by a later read. */
interface NextRead {
  readonly done: Deferred.Deferred<Keys, Unavailable>
  readonly asked: boolean
}

/** Why a read failed, short and safe to show: what was read and what went wrong (no body, no headers). */
class ReadFailure extends Data.TaggedError("ReadFailure")<{ readonly problem: string }> {}

const Discovery = Schema.Struct({ issuer: Schema.String, jwks_uri: Schema.String })

const iso = (ms: number) => new Date(ms).toISOString()

export const make = (options: Options): Effect.Effect<IssuerKeys, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { issuer, http, reads } = options
    const maxAgeMs = Duration.toMillis(options.maxAge)
    const failure = (what: string) => (error: HttpGet.HttpGetError | string) =>
      new ReadFailure({ problem: `${what}: ${typeof error === "string" ? error : error.reason}` })
    const unavailable = (problem: string) =>
      new Unavailable({ message: `OIDC issuer ${issuer} is unavailable: ${problem}` })

    const state = yield* Ref.make<State>({
      keys: undefined,
      jwksUri: undefined,
      failures: 0,
      lastFailureMs: undefined,
      problem: undefined,
    })
    const next = yield* Ref.make<NextRead>({ done: yield* Deferred.make<Keys, Unavailable>(), asked: false })
    // One pending wake-up is enough: the reader looks at `next` when it wakes.
    const wake = yield* Queue.dropping<void>(1)
    const bucket = yield* Ref.make(KeySchedule.fullBucket(yield* Clock.currentTimeMillis))

    const discover = OidcDiscovery.read(issuer, Discovery, "issuer or jwks_uri missing", http).pipe(
      Effect.mapBoth({ onFailure: (problem) => new ReadFailure({ problem }), onSuccess: (d) => d.jwks_uri }),
    )

    const read = (known: string | undefined) =>
      Effect.gen(function* () {
        const jwksUri = known ?? (yield* discover)
        const answer = yield* HttpGet.getJsonAnswer(jwksUri, http).pipe(Effect.mapError(failure("JWKS")))
        const keySet = yield* Effect.try({
          // createLocalJWKSet checks the shape itself.
          try: () => createLocalJWKSet(answer.body as JSONWebKeySet),
          catch: () => failure("JWKS")("not a JSON Web Key Set"),
        })
        const provider = KeySchedule.providerMaxAgeSeconds(answer.cacheControl, answer.age)
        const keys: Keys = {
          keySet,
          readAtMs: yield* Clock.currentTimeMillis,
          lifetimeMs: KeySchedule.lifetimeMs(maxAgeMs, provider),
        }
        return { keys, jwksUri }
      })

    /** The outcome into the state, the metric and, when something changed for operators, the log. */
    const record = (outcome: Either.Either<{ keys: Keys; jwksUri: string }, ReadFailure>, reason: string) =>
      Effect.gen(function* () {
        reads.inc({ issuer, reason, outcome: Either.isRight(outcome) ? "ok" : "failed" })
        const now = yield* Clock.currentTimeMillis
        if (Either.isRight(outcome)) {
          const before = yield* Ref.getAndSet(state, {
            ...outcome.right,
            failures: 0,
            lastFailureMs: undefined,
            problem: undefined,
          })
          if (before.failures > 0) yield* Effect.logInfo(`OIDC issuer ${issuer}: keys read again, no longer stale`)
          return
        }
        const { problem } = outcome.left
        const after = yield* Ref.updateAndGet(state, (s) => ({
          ...s,
          jwksUri: undefined,
          failures: s.failures + 1,
          lastFailureMs: now,
          problem,
        }))
        const message = unavailable(problem).message
        const held = after.keys
        if (held === undefined) return yield* Effect.logWarning(message)
        const freshness = KeySchedule.freshness(held, true, now)
        yield* Effect.logWarning(
          freshness === "expired"
            ? `${message}; the keys read at ${iso(held.readAtMs)} are past the stale limit and no longer used: ID tokens from this issuer cannot be verified (503) until it answers`
            : `${message}; the key set is stale: keeping the keys read at ${iso(held.readAtMs)} (used until ${iso(held.readAtMs + held.lifetimeMs + KeySchedule.STALE_LIMIT_MS)})`,
        )
      })

    /** Waits for the bucket to hold a read, then takes it. */
    const takeRead: Effect.Effect<void> = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const waitMs = yield* Ref.modify(bucket, (b) => {
        const taken = KeySchedule.takeRead(b, now)
        return [taken.waitMs, taken.bucket]
      })
      if (waitMs > 0) {
        yield* Clock.sleep(Duration.millis(waitMs))
        yield* takeRead
      }
    })

    const readOnce = (reason: string) =>
      Effect.gen(function* () {
        yield* takeRead
        // Whoever asked until now is served by this read, which starts after they asked.
        const claimed = yield* Ref.getAndSet(next, { done: yield* Deferred.make<Keys, Unavailable>(), asked: false })
        const outcome = yield* Effect.either(read((yield* Ref.get(state)).jwksUri))
        yield* record(outcome, reason)
        yield* Deferred.done(
          claimed.done,
          Either.isRight(outcome) ? Exit.succeed(outcome.right.keys) : Exit.fail(unavailable(outcome.left.problem)),
        )
      })

    const reader = Effect.gen(function* () {
      const s = yield* Ref.get(state)
      const asked = Effect.as(Queue.take(wake), "asked" as const)
      const due = s.keys === undefined ? undefined : KeySchedule.nextReadAt(s.keys, s.failures, s.lastFailureMs)
      const woken =
        due === undefined
          ? yield* asked
          : yield* Effect.race(
              asked,
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.as(Clock.sleep(Duration.millis(Math.max(0, due - now))), "due" as const),
              ),
            )
      const waiting = (yield* Ref.get(next)).asked
      // A wake-up whose askers an earlier read already served.
      if (woken === "asked" && !waiting) return
      yield* readOnce(waiting ? "token" : "scheduled")
    })
    // A defect in one round (a bug) is logged, and the rounds go on a second later: tokens need this fiber.
    const guarded = Effect.catchAllCause(reader, (cause) =>
      Effect.zipRight(
        Effect.logError(`OIDC issuer ${issuer}: reading its keys failed unexpectedly`, cause),
        Clock.sleep(Duration.seconds(1)),
      ),
    )
    yield* Effect.forkScoped(Effect.forever(guarded))

    const ask = Effect.gen(function* () {
      const done = yield* Ref.modify(next, (n) => [n.done, { ...n, asked: true }])
      yield* Queue.offer(wake, undefined)
      return yield* Deferred.await(done).pipe(
        Effect.timeoutFail({ duration: READ_WAIT, onTimeout: () => unavailable("keys not read in time") }),
      )
    })

    const usable = Effect.gen(function* () {
      const { keys, failures } = yield* Ref.get(state)
      if (keys === undefined) return undefined
      const now = yield* Clock.currentTimeMillis
      return KeySchedule.freshness(keys, failures > 0, now) === "expired" ? undefined : keys
    })

    return {
      current: Effect.flatMap(usable, (keys) =>
        keys === undefined ? Effect.map(ask, (k) => k.keySet) : Effect.succeed(keys.keySet),
      ),
      fresher: Effect.map(ask, (k) => k.keySet),
      status: Effect.gen(function* () {
        const s = yield* Ref.get(state)
        const now = yield* Clock.currentTimeMillis
        const status: IssuerKeysStatus = {
          issuer,
          state: s.keys === undefined ? "unread" : KeySchedule.freshness(s.keys, s.failures > 0, now),
          readAtMs: s.keys?.readAtMs,
          problem: s.problem,
        }
        return status
      }),
    }
  })

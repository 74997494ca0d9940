/**
 * Membership over the ControlPlaneClient. At start: load or make the key, enroll if there is no usable credential
 * (bootstrap token, polling while the request is queued, or an ID token), then read keys and bans. Two fibers keep
 * it current: one refreshes the credential when `CredentialSchedule` says (a third of its lifetime left, before its
 * key retires, and soon after a newer key appears, whether a `key_rotation` event or a sync brought it), one
 * re-reads keys and bans every sync interval. A credential whose key retired while the member was away is reported
 * (`credentialProblem`, a warning) with what the operator can do, until a refresh or enrollment succeeds.
 */
import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt"
import {
  Clock,
  Duration,
  Effect,
  Either,
  Layer,
  Option,
  PubSub,
  Queue,
  Random,
  Redacted,
  Ref,
  Schedule,
  type Scope,
  Stream,
} from "effect"
import * as Biscuit from "../../crypto/Biscuit.js"
import * as Ed25519 from "../../crypto/Ed25519.js"
import * as CredentialSchedule from "../../domain/CredentialSchedule.js"
import * as KeySet from "../../domain/KeySet.js"
import * as PeerKey from "../../domain/PeerKey.js"
import { EnrollmentStatus } from "../../gen/mesh_pb.js"
import { ControlPlaneClient, type ControlPlaneError, type Signer } from "../../services/member/ControlPlaneClient.js"
import {
  Membership,
  MembershipError,
  type MembershipOptions,
  type MembershipService,
} from "../../services/member/Membership.js"
import * as MemberStore from "./MemberStore.js"

interface Current {
  readonly credential: Uint8Array
  readonly issuedAt: number
  readonly expiresAt: number
}

const held = (current: Current): CredentialSchedule.Held => ({
  issuedAt: current.issuedAt,
  expiresAt: current.expiresAt,
  keyId: Biscuit.rootKeyIdOf(current.credential),
})

/** What an operator can do for a member whose credential's key retired, in one line. */
const RETIRED_ADVICE =
  "let it recover on its own (autonomous recovery, in the operator API), give it a new bootstrap token, or approve it again"

const expiryOf = (time: Timestamp | undefined, fallback: number) => (time === undefined ? fallback : timestampMs(time))

export const make = (
  options: MembershipOptions,
): Effect.Effect<MembershipService, MembershipError | ControlPlaneError, ControlPlaneClient | Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* ControlPlaneClient
    const store = Option.match(options.dataDir, { onNone: MemberStore.inMemory, onSome: MemberStore.inDirectory })

    const seed = yield* Option.match(yield* store.loadSeed, {
      onSome: Effect.succeed,
      onNone: () => {
        const fresh = PeerKey.generate().seed
        return Effect.as(store.saveSeed(fresh), fresh)
      },
    })
    const publicKey = Ed25519.publicKeyOf(seed)
    const signer: Signer = { peerId: PeerKey.peerIdOf(publicKey), seed, publicKey }

    const trusted = yield* Ref.make<ReadonlyArray<KeySet.PublicSigningKey>>(yield* store.loadTrusted)
    const planned = yield* Ref.make<CredentialSchedule.PlannedMove | undefined>(undefined)
    /** Why the credential cannot be used, while it cannot. */
    const problem = yield* Ref.make(Option.none<string>())
    /** Wakes the refresh fiber to plan again (new keys, a new credential). */
    const wake = yield* Queue.sliding<void>(1)
    const changes = yield* PubSub.unbounded<void>()
    const banned = yield* Ref.make<ReadonlySet<string>>(new Set())
    const routers = yield* Ref.make<ReadonlyArray<string>>([])

    /** Trusts the control plane key an enrollment answer carried, if we trust none yet (first contact). */
    const trustFirstKey = (key: Uint8Array) =>
      Effect.gen(function* () {
        if ((yield* Ref.get(trusted)).length > 0 || key.length !== Ed25519.PUBLIC_KEY_LENGTH) return
        // Its id is unknown until the first key set; -1 never matches a credential's key id.
        yield* Ref.set(trusted, [{ id: -1, publicKey: key }])
      })

    const keep = (credential: Uint8Array, expiresAt: number) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const current = { credential, issuedAt: now, expiresAt }
        yield* store.saveCredential(current)
        return current
      })

    const enroll: Effect.Effect<Current, MembershipError | ControlPlaneError> = Effect.gen(function* () {
      if (Option.isSome(options.bootstrapToken)) {
        const request = {
          bootstrapToken: Redacted.value(options.bootstrapToken.value),
          role: options.role,
          labels: options.labels,
        }
        let answer = yield* client.enroll(signer, request)
        if (answer.status === EnrollmentStatus.PENDING && options.onPending !== undefined) {
          yield* options.onPending({
            peerId: signer.peerId,
            requestId: answer.requestId,
            pollInterval: Duration.seconds(Math.max(1, answer.pollIntervalSeconds)),
          })
        }
        while (answer.status === EnrollmentStatus.PENDING) {
          yield* Effect.logInfo("enrollment waits for approval").pipe(
            Effect.annotateLogs({ request_id: answer.requestId }),
          )
          yield* Effect.sleep(Duration.seconds(Math.max(1, answer.pollIntervalSeconds)))
          answer = yield* client.enrollStatus(signer)
        }
        if (answer.status !== EnrollmentStatus.APPROVED) {
          return yield* new MembershipError({ reason: "enrollment was rejected by an operator" })
        }
        // The approval's credential is handed out once; if that answer was lost, an approved peer enrolls again.
        if (answer.biscuitToken.length === 0) answer = yield* client.enroll(signer, request)
        if (answer.status !== EnrollmentStatus.APPROVED || answer.biscuitToken.length === 0) {
          return yield* new MembershipError({ reason: "enrollment was approved but no credential was issued" })
        }
        yield* trustFirstKey(answer.controlPlanePublicKey)
        return yield* keep(answer.biscuitToken, expiryOf(answer.expireTime, 0))
      }
      if (Option.isSome(options.idToken)) {
        const idToken = yield* options.idToken.value.pipe(
          Effect.mapError(() => new MembershipError({ reason: "the ID token could not be read" })),
        )
        const answer = yield* client.register(signer, {
          idToken: Redacted.value(idToken),
          role: options.role,
          labels: options.labels,
        })
        yield* trustFirstKey(answer.controlPlanePublicKey)
        return yield* keep(answer.biscuitToken, expiryOf(answer.expireTime, 0))
      }
      return yield* new MembershipError({ reason: "not enrolled: give a bootstrap token or an ID token" })
    }).pipe(
      Effect.tap(() => store.saveControlPlane(client.url)),
      Effect.tap(() =>
        Effect.logInfo("enrolled").pipe(Effect.annotateLogs({ peer_id: signer.peerId, role: options.role })),
      ),
    )

    /**
     * A saved credential that expired while the member was away (or whose key retired): renewed if the control plane
     * still will (a live key, or autonomous recovery), else enrolled again; if neither works, the reason and the
     * operator's options in one message.
     */
    const renewAtStart = (saved: Current): Effect.Effect<Current, MembershipError | ControlPlaneError> =>
      client.refresh(signer, saved.credential).pipe(
        Effect.flatMap((a) => keep(a.biscuitToken, expiryOf(a.expireTime, 0))),
        Effect.catchTag("ControlPlaneRefused", (refused) =>
          refused.status === 401
            ? enroll.pipe(
                Effect.mapError(
                  (error) =>
                    new MembershipError({
                      reason: `the saved credential expired while this member was away and the control plane did not renew it (${refused.reason}); enrolling again failed: ${error.message}. To rejoin: ${RETIRED_ADVICE}`,
                    }),
                ),
              )
            : Effect.fail<MembershipError | ControlPlaneError>(refused),
        ),
      )

    const saved = yield* store.loadCredential
    const startedAt = yield* Clock.currentTimeMillis
    const current = yield* Ref.make<Current>(
      yield* Option.match(saved, {
        onNone: () => enroll,
        onSome: (c) => (c.expiresAt > startedAt ? Effect.succeed(c) : renewAtStart(c)),
      }),
    )

    const syncKeys = Effect.gen(function* () {
      const body = yield* client.keys
      const now = yield* Clock.currentTimeMillis
      const known = (yield* Ref.get(trusted)).map((k) => k.publicKey)
      const { credential } = yield* Ref.get(current)
      // Every key we trusted may have retired while we were away: the credential the control plane just issued us
      // then vouches for its key set, as its first answer did at enrollment.
      const checked = Either.orElse(KeySet.verify(body, known, now), (reason) =>
        Either.mapLeft(KeySet.verifyAnchoredBy(body, credential, now), () => reason),
      )
      const keys = yield* Either.match(checked, {
        onLeft: (reason) => Effect.fail(new MembershipError({ reason: `control plane key set refused: ${reason}` })),
        onRight: Effect.succeed,
      })
      yield* Ref.set(trusted, keys)
      yield* store.saveTrusted(keys)
      const draw = yield* Random.next
      const move = CredentialSchedule.planMove(held(yield* Ref.get(current)), keys, yield* Ref.get(planned), now, draw)
      if (move !== undefined) {
        yield* Ref.set(planned, move)
        yield* Effect.logInfo("control plane has a new signing key; the credential moves to it").pipe(
          Effect.annotateLogs({ key_id: move.newestKeyId, refresh_in_ms: move.at - now }),
        )
      }
      yield* Queue.offer(wake, undefined)
    })

    const syncInfo = Effect.gen(function* () {
      const info = yield* client.info
      yield* Ref.set(banned, new Set(info.bannedPeerIds))
      yield* Ref.set(routers, [...info.routerAddresses])
    })

    /**
     * Keys, then bans and routers. Each is read whatever became of the other: a key set that fails to verify (or a
     * `/keys` that fails) must not hold back a ban. A failure is reported once both have been tried.
     */
    const sync = Effect.flatMap(Effect.exit(syncKeys), (keys) => Effect.zipRight(syncInfo, keys))
    yield* sync

    const refresh = (due: CredentialSchedule.Due) =>
      Effect.gen(function* () {
        const { credential } = yield* Ref.get(current)
        const answer = yield* client.refresh(signer, credential).pipe(
          Effect.map((a) => ({ credential: a.biscuitToken, expiresAt: expiryOf(a.expireTime, 0) })),
          // A superseded or retired credential: enroll again (an approved peer needs no new approval).
          Effect.catchTag("ControlPlaneRefused", (refused) =>
            refused.status === 401
              ? Effect.map(enroll, (c) => ({ credential: c.credential, expiresAt: c.expiresAt }))
              : Effect.fail(refused),
          ),
        )
        yield* Ref.set(current, yield* keep(answer.credential, answer.expiresAt))
        yield* Ref.set(problem, Option.none())
        yield* PubSub.publish(changes, undefined)
        yield* Effect.logDebug("credential refreshed").pipe(Effect.annotateLogs({ reason: due._tag }))
      })

    /** Says, once per credential, that its key retired before it moved; then the refresh decides what happens. */
    const reportRetired = (due: Extract<CredentialSchedule.Due, { _tag: "KeyRetired" }>) =>
      Effect.gen(function* () {
        if (Option.isSome(yield* Ref.get(problem))) return
        const reason = `the credential's signing key (${due.keyId}) has retired: it cannot be verified until a refresh or a new enrollment succeeds`
        yield* Ref.set(problem, Option.some(reason))
        yield* Effect.logWarning("credential signed by a retired key").pipe(Effect.annotateLogs({ key_id: due.keyId }))
      })

    const failed = (due: CredentialSchedule.Due, error: MembershipError | ControlPlaneError) =>
      Effect.gen(function* () {
        if (due._tag !== "KeyRetired") return
        const reason = `the credential's signing key (${due.keyId}) retired while this member was away, and the control plane did not renew it: ${error.message}. To rejoin: ${RETIRED_ADVICE}`
        yield* Ref.set(problem, Option.some(reason))
        yield* Effect.logError(reason)
      })

    /** Waits until `at` or until woken; true when woken. */
    const waitUntil = (at: number) =>
      Effect.gen(function* () {
        const wait = Math.max(0, at - (yield* Clock.currentTimeMillis))
        return yield* Effect.raceFirst(
          Effect.as(Effect.sleep(Duration.millis(wait)), false),
          Effect.as(Queue.take(wake), true),
        )
      })

    const refreshLoop = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const held_ = held(yield* Ref.get(current))
      const keys = yield* Ref.get(trusted)
      const due = CredentialSchedule.nextRefresh(held_, keys, yield* Ref.get(planned), now)
      if (due._tag === "KeyRetired") yield* reportRetired(due)
      if (yield* waitUntil(due.at)) return
      yield* refresh(due).pipe(
        Effect.catchAll((error) =>
          Effect.gen(function* () {
            yield* failed(due, error)
            const delay = CredentialSchedule.retryDelay(held_, keys, yield* Clock.currentTimeMillis)
            yield* Effect.logWarning("credential refresh failed; retrying").pipe(
              Effect.annotateLogs({ error: error.message, retry_in_ms: delay }),
            )
            yield* waitUntil((yield* Clock.currentTimeMillis) + delay)
          }),
        ),
      )
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(Effect.logWarning("credential refresh failed", cause), Effect.sleep(Duration.seconds(30))),
      ),
      Effect.forever,
    )
    yield* Effect.forkScoped(refreshLoop)

    yield* sync.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("key and ban sync failed", cause)),
      Effect.repeat(
        options.jitter === true
          ? Schedule.spaced(options.syncInterval).pipe(Schedule.jitteredWith({ min: 1, max: 1.1 }))
          : Schedule.spaced(options.syncInterval),
      ),
      Effect.delay(options.syncInterval),
      Effect.forkScoped,
    )

    const trust = Effect.map(Effect.zip(Ref.get(trusted), Ref.get(banned)), ([keys, bans]) => {
      const byId = new Map(keys.map((k) => [k.id, k.publicKey]))
      return { keyFor: (id: number) => byId.get(id), isBanned: (peerId: string) => bans.has(peerId) }
    })

    return {
      peerId: signer.peerId,
      signer,
      credential: Effect.map(Ref.get(current), (c) => c.credential),
      credentialExpiresAt: Effect.map(Ref.get(current), (c) => c.expiresAt),
      credentialChanges: Stream.fromPubSub(changes),
      credentialProblem: Ref.get(problem),
      trust,
      trustedKeys: Effect.map(Ref.get(trusted), (keys) => keys.map((k) => k.publicKey)),
      routers: Ref.get(routers),
      banned: Ref.get(banned),
      apply: (event) => {
        switch (event.type) {
          case "banned":
            return Ref.update(banned, (set) => new Set([...set, event.peerId]))
          case "unbanned":
            return Ref.update(banned, (set) => new Set([...set].filter((p) => p !== event.peerId)))
          case "key_rotation":
            return syncKeys.pipe(
              Effect.catchAllCause((cause) => Effect.logWarning("key sync after rotation failed", cause)),
            )
          default:
            return Effect.void
        }
      },
      sync,
    }
  })

export const layer = (options: MembershipOptions) => Layer.scoped(Membership, make(options))

/**
 * The two sides of `/mesh/auth/1.0.0` on one connection. The dialer opens the stream and sends its credential; the
 * listener verifies it, records the peer and answers with its own credential, or answers with a short reason and
 * closes the connection. The dialer verifies the answer the same way. An inbound connection that has not
 * authenticated within the listener deadline is closed.
 *
 * Once a connection is authenticated, either side may run the exchange again on it (re-authentication): it sends its
 * current credential and gets the other's in the answer, and both records are replaced. A member does so after it
 * refreshed its credential, and before dropping a peer whose recorded credential expired or whose key retired: the
 * peer may hold a newer one. A failed re-authentication changes nothing; re-verification decides about the peer.
 */
import type { Connection, Stream } from "@libp2p/interface"
import { Clock, Deferred, Duration, Effect, Either } from "effect"
import * as Spans from "../platform/Spans.js"
import type { Admissions, Tracked } from "./Admissions.js"
import * as AuthProtocol from "./AuthProtocol.js"
import type { MeshTrust } from "./Trust.js"

export const LISTENER_DEADLINE = Duration.seconds(10)
export const DIALER_DEADLINE = Duration.seconds(5)
/** After a refusal the listener lets the dialer hang up first, so that the reason reaches it, but not for longer. */
const REFUSAL_LINGER = Duration.seconds(1)
/** A peer may re-authenticate a connection at most this often; more often is answered with a refusal. */
const REAUTH_MIN_GAP_MS = 1_000

export interface HandshakeDeps {
  readonly admissions: Admissions
  readonly credential: Effect.Effect<Uint8Array>
  readonly trust: Effect.Effect<MeshTrust>
  /** Called once a connection's peer is admitted (the host runs identify then, not before). */
  readonly admitted: (connection: Connection) => void
}

/** A failed step, as the refusal text we record and log; never a credential. */
const step = <A>(reason: string, run: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, string> =>
  Effect.tryPromise({ try: run, catch: () => reason })

const send = (stream: Stream, payload: Uint8Array): Effect.Effect<void, string> =>
  step("could not send on the auth stream", async (signal) => {
    AuthProtocol.writeFrame(stream, payload)
    await stream.close({ signal })
  })

const receive = (stream: Stream, what: string): Effect.Effect<Uint8Array, string> =>
  step(`no ${what} on the auth stream`, (signal) => AuthProtocol.readFrame(stream, signal))

/** Closes the connection, gracefully if it goes quickly. */
export const close = (connection: Connection): Effect.Effect<void> =>
  Effect.promise(() => connection.close().catch((error: unknown) => connection.abort(asError(error))))

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error("connection close failed"))

/** Completes when the connection has closed. */
const closed = (connection: Connection): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (connection.status !== "open") return resume(Effect.void)
    const onClose = () => resume(Effect.void)
    connection.addEventListener("close", onClose, { once: true })
    return Effect.sync(() => connection.removeEventListener("close", onClose))
  })

export const refuse = (deps: HandshakeDeps, tracked: Tracked, reason: string): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.sync(() => deps.admissions.refuse(tracked, reason)),
    Effect.zipRight(
      Effect.logDebug("mesh peer refused").pipe(Effect.annotateLogs({ peer: tracked.peerId, reason })),
      close(tracked.connection),
    ),
  )

/** Verifies a credential received from the connection's remote peer, at the current time and trust. */
const verify = (deps: HandshakeDeps, tracked: Tracked, credential: Uint8Array) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const trust = yield* deps.trust
    return Either.map(AuthProtocol.check(credential, tracked.peerId, trust, now), (verified) =>
      AuthProtocol.toPeer(verified, credential, now),
    )
  })

/** Listener side: the handler of `/mesh/auth/1.0.0`. */
export const answer = (deps: HandshakeDeps, stream: Stream, connection: Connection): Effect.Effect<void> => {
  const known = deps.admissions.tracked(connection)
  if (known?.status === "authenticated") return answerReauthentication(deps, stream, known)
  // The dialer authenticates; a stream opened by the side that listened is not part of the protocol.
  if (connection.direction !== "inbound") return Effect.sync(() => stream.abort(new Error("unexpected auth stream")))
  const tracked = deps.admissions.track(connection)
  return Effect.gen(function* () {
    const frame = yield* Effect.flatMap(receive(stream, "credential"), AuthProtocol.decodeFrame)
    const verified = yield* verify(deps, tracked, frame.biscuit)
    if (Either.isLeft(verified)) {
      deps.admissions.refuse(tracked, verified.left)
      yield* send(stream, AuthProtocol.encodeResponse({ success: false, error: verified.left })).pipe(Effect.ignore)
      yield* closed(connection).pipe(Effect.timeout(REFUSAL_LINGER), Effect.ignore)
      return yield* Effect.fail(verified.left)
    }
    // Recorded before we answer, so that the dialer, once it reads our answer, finds itself admitted here.
    if (!deps.admissions.admit(tracked, verified.right)) return yield* Effect.fail("connection was already refused")
    const own = yield* deps.credential
    yield* send(stream, AuthProtocol.encodeResponse({ success: true, biscuit: own }))
    deps.admitted(connection)
  }).pipe(
    Effect.timeoutFail({ duration: LISTENER_DEADLINE, onTimeout: () => "no credential within the deadline" }),
    Effect.catchAll((reason) =>
      Effect.zipRight(
        Effect.sync(() => stream.abort(new Error(reason))),
        refuse(deps, tracked, reason),
      ).pipe(Effect.zipLeft(Spans.annotate("mesh.handshake.refused", true))),
    ),
    Spans.withSpan("mesh.auth.handshake", HANDSHAKE_SPAN("listener", tracked.peerId)),
  )
}

/** The span of one handshake: which side, and the remote peer (never a credential). */
const HANDSHAKE_SPAN = (side: "dialer" | "listener", peerId: string) =>
  ({
    kind: side === "dialer" ? "client" : "server",
    captureStackTrace: false,
    attributes: { "mesh.handshake.side": side, "mesh.peer.id": peerId },
  }) as const

/** Dialer side: run on every outbound connection as soon as it opens. */
export const initiate = (deps: HandshakeDeps, connection: Connection): Effect.Effect<void> => {
  const tracked = deps.admissions.track(connection)
  return Effect.gen(function* () {
    const own = yield* deps.credential
    const stream = yield* step("peer does not speak the mesh auth protocol", (signal) =>
      connection.newStream(AuthProtocol.PROTOCOL, { runOnLimitedConnection: true, signal }),
    )
    yield* send(stream, AuthProtocol.encodeFrame({ biscuit: own }))
    const response = yield* Effect.flatMap(receive(stream, "answer"), AuthProtocol.decodeResponse)
    if (!response.success) return yield* Effect.fail(`refused by peer: ${AuthProtocol.remoteError(response.error)}`)
    const verified = yield* verify(deps, tracked, response.biscuit)
    if (Either.isLeft(verified)) return yield* Effect.fail(`peer credential refused: ${verified.left}`)
    if (!deps.admissions.admit(tracked, verified.right)) return yield* Effect.fail("connection was already refused")
    deps.admitted(connection)
  }).pipe(
    Effect.timeoutFail({ duration: DIALER_DEADLINE, onTimeout: () => "no answer within the deadline" }),
    Effect.catchAll((reason) =>
      refuse(deps, tracked, reason).pipe(Effect.zipLeft(Spans.annotate("mesh.handshake.refused", true))),
    ),
    Spans.withSpan("mesh.auth.handshake", HANDSHAKE_SPAN("dialer", tracked.peerId)),
  )
}

/** Inbound connections must authenticate within the listener deadline. */
export const expire = (deps: HandshakeDeps, connection: Connection): Effect.Effect<void> => {
  const tracked = deps.admissions.track(connection)
  return Deferred.await(tracked.outcome).pipe(
    Effect.timeout(LISTENER_DEADLINE),
    Effect.catchTag("TimeoutException", () =>
      tracked.status === "pending" ? refuse(deps, tracked, "no handshake within the deadline") : Effect.void,
    ),
    Effect.asVoid,
  )
}

/** Listener side of a re-authentication: a new credential for a connection that is already authenticated. */
const answerReauthentication = (deps: HandshakeDeps, stream: Stream, tracked: Tracked): Effect.Effect<void> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    if (tracked.reauthenticatedAt !== undefined && now - tracked.reauthenticatedAt < REAUTH_MIN_GAP_MS) {
      return yield* Effect.fail("re-authenticated too often")
    }
    tracked.reauthenticatedAt = now
    const frame = yield* Effect.flatMap(receive(stream, "credential"), AuthProtocol.decodeFrame)
    const verified = yield* verify(deps, tracked, frame.biscuit)
    if (Either.isLeft(verified)) return yield* Effect.fail(verified.left)
    deps.admissions.refresh(verified.right)
    yield* send(stream, AuthProtocol.encodeResponse({ success: true, biscuit: yield* deps.credential }))
  }).pipe(
    Effect.timeoutFail({ duration: DIALER_DEADLINE, onTimeout: () => "no credential within the deadline" }),
    Effect.catchAll((reason) =>
      send(stream, AuthProtocol.encodeResponse({ success: false, error: reason })).pipe(
        Effect.catchAll(() => Effect.sync(() => stream.abort(new Error(reason)))),
        Effect.zipRight(
          Effect.logDebug("mesh re-authentication refused").pipe(Effect.annotateLogs({ peer: tracked.peerId, reason })),
        ),
      ),
    ),
    Spans.withSpan("mesh.auth.reauthenticate", HANDSHAKE_SPAN("listener", tracked.peerId)),
  )

/**
 * Either side of an authenticated connection: sends our current credential and records the one the peer answers
 * with. Fails with the reason when the peer refused ours or its answer does not verify; the records stay as they were.
 */
export const reauthenticate = (deps: HandshakeDeps, tracked: Tracked): Effect.Effect<void, string> =>
  Effect.gen(function* () {
    const own = yield* deps.credential
    const stream = yield* step("peer does not speak the mesh auth protocol", (signal) =>
      tracked.connection.newStream(AuthProtocol.PROTOCOL, { runOnLimitedConnection: true, signal }),
    )
    yield* send(stream, AuthProtocol.encodeFrame({ biscuit: own }))
    const response = yield* Effect.flatMap(receive(stream, "answer"), AuthProtocol.decodeResponse)
    if (!response.success) return yield* Effect.fail(`refused by peer: ${AuthProtocol.remoteError(response.error)}`)
    const verified = yield* verify(deps, tracked, response.biscuit)
    if (Either.isLeft(verified)) return yield* Effect.fail(`peer credential refused: ${verified.left}`)
    deps.admissions.refresh(verified.right)
  }).pipe(
    Effect.timeoutFail({ duration: DIALER_DEADLINE, onTimeout: () => "no answer within the deadline" }),
    Spans.withSpan("mesh.auth.reauthenticate", HANDSHAKE_SPAN("dialer", tracked.peerId)),
  )

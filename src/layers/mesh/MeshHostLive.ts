/**
 * MeshHost over js-libp2p 3. Every connection is tracked in the admission table from the moment it opens: outbound
 * ones run the dialer side of `/mesh/auth/1.0.0`, inbound ones must complete it within the listener deadline. The
 * connection gater and the guard on stream handlers consult the same table (src/p2p/Gate.ts), so relay, DHT and
 * gossip serve authenticated peers only. libp2p stops when the scope closes.
 */
import type { GossipsubMessage, SubscriptionChangeData } from "@libp2p/gossipsub"
import type { Connection } from "@libp2p/interface"
import { peerIdFromString } from "@libp2p/peer-id"
import { multiaddr } from "@multiformats/multiaddr"
import {
  Clock,
  Deferred,
  Duration,
  Effect,
  Either,
  FiberSet,
  Layer,
  Option,
  Ref,
  Schedule,
  type Scope,
  Stream,
} from "effect"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import { Admissions } from "../../p2p/Admissions.js"
import * as AuthProtocol from "../../p2p/AuthProtocol.js"
import * as DialPolicy from "../../p2p/DialPolicy.js"
import * as Gate from "../../p2p/Gate.js"
import { gossipsOver, isGossipProtocol, RouterPeering, Topics } from "../../p2p/Gossip.js"
import * as Handshake from "../../p2p/Handshake.js"
import * as Identify from "../../p2p/Identify.js"
import * as Libp2pHost from "../../p2p/Libp2pHost.js"
import * as OptimisticSelect from "../../p2p/OptimisticSelect.js"
import type { AuthenticatedPeer, MeshTrust } from "../../p2p/Trust.js"
import { describe } from "../../platform/Describe.js"
import * as Spans from "../../platform/Spans.js"
import { Membership } from "../../services/member/Membership.js"
import {
  MeshDialError,
  MeshHost,
  type MeshHostOptions,
  type MeshHostService,
  MeshListenError,
  MeshStartError,
} from "../../services/mesh/MeshHost.js"
import { PROTOCOL as PROXY_PROTOCOL } from "../../services/proxy/PeerProxy.js"

/** How long a gated request (stream, relay reservation) waits for its peer's handshake to end. */
const GATE_WAIT = Handshake.LISTENER_DEADLINE
/** Re-verification catches expiries even when the owner has no reason to call `reverify`. */
const REVERIFY_EVERY = Duration.minutes(1)
/** Peers whose last direct dial failure is remembered (the oldest is forgotten first). */
const DIRECT_FAILURES_KEPT = 1024
/** Gossip is lossy by nature: a subscriber that falls this far behind loses the newest messages, not memory. */
const SUBSCRIBER_BUFFER = 1024

/** libp2p error text, on one line and short; it names addresses and protocols, never a credential. */
export const make = (options: MeshHostOptions): Effect.Effect<MeshHostService, MeshStartError, Scope.Scope> =>
  Effect.gen(function* () {
    const admissions = new Admissions()
    // Callbacks from libp2p run their effects in fibers owned by this scope.
    const runFork = yield* FiberSet.makeRuntime<never>()
    const runPromise = yield* FiberSet.makeRuntimePromise<never>()

    const awaitAuthenticated = (peerId: string): Promise<boolean> =>
      runPromise(admissions.awaitAuthenticated(peerId, GATE_WAIT)).catch(() => false)
    const guard: Gate.StreamGuard = {
      isAuthenticated: (peerId) => admissions.isAuthenticated(peerId),
      awaitAuthenticated,
      permits: (peerId, protocol) =>
        !isGossipProtocol(protocol) || gossipsOver(options.mode === "router", admissions.get(peerId)?.role),
    }
    const gater = Gate.connectionGater({
      isBanned: (peerId) => runPromise(Effect.map(options.trust, (trust) => trust.isBanned(peerId))).catch(() => true),
      isAuthenticated: guard.isAuthenticated,
      awaitAuthenticated,
    })

    const libp2p = yield* Effect.tryPromise({
      try: () =>
        Libp2pHost.create({
          seed: options.seed,
          listen: options.listen,
          mode: options.mode,
          gater,
          guard,
          // The proxy's callers propose its protocol optimistically; its echo can wait for the answer (HeldEcho).
          optimisticProtocols: [PROXY_PROTOCOL],
          // A router is known by the role its credential proved in the handshake.
          isDhtServer: (peer) => admissions.get(peer)?.role === ROUTER_ROLE,
          ...(options.announce === undefined ? {} : { announce: options.announce }),
        }),
      catch: (error) => new MeshStartError({ reason: describe(error) }),
    })
    const peerId = libp2p.peerId.toString()
    const peering = new RouterPeering(libp2p.services.pubsub, admissions, options.mode === "router")
    const deps: Handshake.HandshakeDeps = {
      admissions,
      credential: options.credential,
      trust: options.trust,
      // Kad-dht and gossipsub learn of a peer from identify, so they see authenticated peers only.
      admitted: (connection) => {
        const peer = connection.remotePeer.toString()
        peering.admitted(peer)
        const essential = gossipsOver(options.mode === "router", admissions.get(peer)?.role)
        runFork(Identify.afterAdmission((c) => libp2p.services.identify.identify(c), connection, essential))
      },
    }

    const onOpen = (event: CustomEvent<Connection>) => {
      const connection = event.detail
      admissions.track(connection)
      runFork(
        connection.direction === "outbound" ? Handshake.initiate(deps, connection) : Handshake.expire(deps, connection),
      )
    }
    // Peers whose last path was a relay that closed with no direct connection beside it (its router died, most
    // often): their next dial plan starts the relays at once, as after a failed direct dial (DialPolicy.plan).
    const relayedOnly = yield* Ref.make<ReadonlySet<string>>(new Set())
    const onClose = (event: CustomEvent<Connection>) => {
      const closed = event.detail
      const peer = closed.remotePeer.toString()
      admissions.untrack(closed)
      peering.settled(peer)
      if (
        closed.limits !== undefined &&
        !admissions.authenticatedConnections(peer).some((c) => c.limits === undefined)
      ) {
        runFork(
          Ref.update(relayedOnly, (set) => {
            const next = new Set(set).add(peer)
            if (next.size > DIRECT_FAILURES_KEPT) next.delete(next.values().next().value as string)
            return next
          }),
        )
      }
    }
    yield* scoped(
      () => libp2p.addEventListener("connection:open", onOpen),
      () => libp2p.removeEventListener("connection:open", onOpen),
    )
    yield* scoped(
      () => libp2p.addEventListener("connection:close", onClose),
      () => libp2p.removeEventListener("connection:close", onClose),
    )

    yield* Effect.tryPromise({
      try: () =>
        libp2p.handle(
          AuthProtocol.PROTOCOL,
          (stream, connection) => {
            runFork(Handshake.answer(deps, stream, connection))
          },
          { runOnLimitedConnection: true },
        ),
      catch: (error) => new MeshStartError({ reason: describe(error) }),
    })

    const topics = new Topics(libp2p.services.pubsub, admissions)
    if (options.mode === "router") {
      const pubsub = libp2p.services.pubsub
      const onSubscriptions = (event: CustomEvent<SubscriptionChangeData>) => {
        const { peerId: from, subscriptions } = event.detail
        if (!admissions.isAuthenticated(from.toString())) return
        for (const s of subscriptions) {
          if (s.subscribe && !topics.hubJoin(s.topic)) {
            runFork(Effect.logWarning("gossip hub topic limit reached").pipe(Effect.annotateLogs({ topic: s.topic })))
          }
        }
      }
      yield* scoped(
        () => pubsub.addEventListener("subscription-change", onSubscriptions),
        () => pubsub.removeEventListener("subscription-change", onSubscriptions),
      )
    }

    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => libp2p.start(),
        catch: (error) => new MeshStartError({ reason: describe(error) }),
      }),
      () => Effect.tryPromise(async () => libp2p.stop()).pipe(Effect.ignore),
    )

    /** Closes every connection to the peer; a string that is no peer id has none. */
    const hangUp = (peer: string) =>
      Either.match(
        Either.try(() => peerIdFromString(peer)),
        {
          onLeft: () => Effect.void,
          onRight: (id) => Effect.promise(() => libp2p.hangUp(id).catch(() => undefined)),
        },
      )

    const drop = (peer: string, reason: string) =>
      Effect.zipRight(
        Effect.sync(() => {
          admissions.drop(peer, reason)
          peering.settled(peer)
        }),
        Effect.zipRight(Effect.logInfo("mesh peer dropped").pipe(Effect.annotateLogs({ peer, reason })), hangUp(peer)),
      )

    /** Re-runs the auth exchange with the peer on one of its authenticated connections (see Handshake.ts). */
    /** Re-authentications under way, per peer: callers asking at once share one exchange. */
    const reauthenticating = yield* Ref.make<ReadonlyMap<string, Deferred.Deferred<void, string>>>(new Map())

    /** Re-runs the auth exchange with the peer on one of its authenticated connections (see Handshake.ts). */
    const reauthenticatePeer = (peer: string): Effect.Effect<void, string> =>
      Effect.gen(function* () {
        const mine = yield* Deferred.make<void, string>()
        const shared = yield* Ref.modify(reauthenticating, (map) => {
          const found = map.get(peer)
          return found === undefined ? [mine, new Map(map).set(peer, mine)] : [found, map]
        })
        if (shared === mine) {
          const connection = admissions.authenticatedConnections(peer)[0]
          const tracked = connection === undefined ? undefined : admissions.tracked(connection)
          const exchange =
            tracked === undefined ? Effect.fail("no authenticated connection") : Handshake.reauthenticate(deps, tracked)
          yield* exchange.pipe(
            Effect.exit,
            Effect.flatMap((exit) => Deferred.done(mine, exit)),
            Effect.ensuring(
              Ref.update(reauthenticating, (map) => {
                const next = new Map(map)
                next.delete(peer)
                return next
              }),
            ),
            Effect.forkIn(hostScope),
          )
        }
        return yield* Deferred.await(shared)
      })

    /** After our credential changed: every authenticated peer gets the new one (and answers with its own). */
    const reauthenticate: Effect.Effect<void> = Effect.suspend(() =>
      Effect.forEach(
        admissions.list(),
        (known) =>
          reauthenticatePeer(known.peerId).pipe(
            Effect.catchAll((reason) =>
              Effect.logDebug("mesh re-authentication failed").pipe(
                Effect.annotateLogs({ peer: known.peerId, reason }),
              ),
            ),
          ),
        { concurrency: 16, discard: true },
      ),
    )

    /** A recorded credential that expired or whose key retired may have a successor the peer can show us. */
    const staleCredential = (reason: string) =>
      reason === "credential has expired" || reason === "credential is signed by an unknown or retired key"

    const reverifyPeer = (known: AuthenticatedPeer, now: number, trust: MeshTrust): Effect.Effect<void> => {
      const checked = AuthProtocol.check(known.credential, known.peerId, trust, now)
      if (Either.isRight(checked)) {
        return Effect.sync(() => admissions.refresh(AuthProtocol.toPeer(checked.right, known.credential, now)))
      }
      if (!staleCredential(checked.left)) return drop(known.peerId, checked.left)
      return reauthenticatePeer(known.peerId).pipe(
        Effect.matchEffect({
          onFailure: () => drop(known.peerId, checked.left),
          onSuccess: () =>
            Effect.logDebug("mesh peer re-authenticated").pipe(Effect.annotateLogs({ peer: known.peerId })),
        }),
      )
    }

    const reverify: Effect.Effect<void> = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const trust = yield* options.trust
      yield* Effect.forEach(admissions.list(), (known) => reverifyPeer(known, now, trust), {
        concurrency: 16,
        discard: true,
      })
    })
    yield* Effect.forkScoped(Effect.repeat(Effect.delay(reverify, REVERIFY_EVERY), Schedule.forever))
    if (options.credentialChanges !== undefined) {
      yield* options.credentialChanges.pipe(
        Stream.runForEach(() => reauthenticate),
        Effect.forkScoped,
      )
    }

    const dial = (address: string, dialOptions?: { readonly requireRole?: string; readonly anonymousAs?: string }) =>
      Effect.gen(function* () {
        const fail = (reason: string) => Effect.fail(new MeshDialError({ address, reason }))
        const expected = dialOptions?.anonymousAs
        // A direct attempt of the dial plan names no peer to libp2p: libp2p joins every dial to a peer it is already
        // dialling, so a relayed attempt would otherwise wait behind a private address that drops packets until that
        // address's timeout. The peer the noise handshake proved is checked here instead.
        const named = expected === undefined ? address : address.replace(new RegExp(`/p2p/${expected}$`), "")
        const target = yield* Effect.try({ try: () => multiaddr(named), catch: () => "not a multiaddr" }).pipe(
          Effect.catchAll(fail),
        )
        const connection = yield* Effect.tryPromise({
          try: (signal) => libp2p.dial(target, { signal }),
          catch: describe,
        }).pipe(Effect.catchAll(fail))
        if (expected !== undefined && connection.remotePeer.toString() !== expected) {
          yield* Effect.promise(() => connection.close().catch(() => undefined))
          return yield* fail("another peer answered at that address")
        }
        const tracked = admissions.track(connection)
        const outcome = yield* Deferred.await(tracked.outcome).pipe(
          Effect.timeoutFail({
            duration: Duration.sum(Handshake.LISTENER_DEADLINE, Duration.seconds(1)),
            onTimeout: () => "handshake did not finish",
          }),
          Effect.catchAll(fail),
        )
        if (outcome._tag === "Refused") return yield* fail(outcome.reason)
        const role = dialOptions?.requireRole
        if (role !== undefined && outcome.peer.role !== role) {
          return yield* fail(`peer has role ${outcome.peer.role}, not ${role}`)
        }
        return outcome.peer
      }).pipe(Spans.withSpan("mesh.dial", { kind: "client", captureStackTrace: false }))

    /** Where the peer may be reached: addresses the peer store holds (DHT, identify), then each router's relay. */
    const candidates = (peer: string) =>
      Effect.gen(function* () {
        const stored = yield* Effect.promise(() =>
          libp2p.peerStore.get(peerIdFromString(peer)).then(
            (record) => record.addresses.map((a) => a.multiaddr.toString()),
            () => [] as Array<string>,
          ),
        )
        const direct = stored
          .filter((a) => !a.includes("/p2p-circuit"))
          .map((a) => (a.endsWith(`/p2p/${peer}`) ? a : `${a}/p2p/${peer}`))
        const relays = admissions
          .list()
          .filter((p) => p.role === ROUTER_ROLE && p.peerId !== peer)
          .map((router) => `/p2p/${router.peerId}/p2p-circuit/p2p/${peer}`)
        return { direct, relays }
      })

    /**
     * One attempt to reach a peer that has no authenticated connection: the dial plan of DialPolicy, its attempts
     * staggered and raced, the first to authenticate winning. A dial to an address that drops packets (another home's
     * private address) holds up nothing: the next attempt starts after its stagger, the relays after their head start.
     * `directOnly`: the peer's own addresses alone (the upgrade of a relayed path).
     */
    const reach = (peer: string, directOnly = false): Effect.Effect<AuthenticatedPeer, MeshDialError> =>
      Effect.gen(function* () {
        const { direct, relays } = yield* candidates(peer)
        const directFailed = (yield* Ref.get(directFailures)).has(peer) || (yield* Ref.get(relayedOnly)).has(peer)
        const attempts = DialPolicy.plan(direct, directOnly ? [] : relays, directFailed)
        if (attempts.length === 0) {
          return yield* new MeshDialError({
            address: peer,
            reason: directOnly ? "no known address of its own" : "no known address and no router to relay through",
          })
        }
        const failed = yield* Effect.forEach(attempts, () => Deferred.make<void>())
        const remember = (attempt: DialPolicy.Attempt, reason: Option.Option<string>) =>
          attempt.relayed
            ? Effect.void
            : Effect.zipRight(
                Option.isSome(reason)
                  ? Effect.void
                  : Ref.update(relayedOnly, (set) => {
                      const next = new Set(set)
                      next.delete(peer)
                      return next
                    }),
                Ref.update(directFailures, (map) => {
                  const next = new Map(map)
                  next.delete(peer)
                  if (Option.isSome(reason)) next.set(peer, `${attempt.address}: ${reason.value}`)
                  if (next.size > DIRECT_FAILURES_KEPT) next.delete(next.keys().next().value as string)
                  return next
                }),
              )
        const reasons = yield* Ref.make<ReadonlyArray<string>>([])
        const run = (attempt: DialPolicy.Attempt, i: number) =>
          Effect.raceFirst(
            Effect.sleep(attempt.delay),
            Effect.forEach(failed.slice(0, i), Deferred.await, { discard: true }),
          ).pipe(
            Effect.zipRight(
              dial(attempt.address, attempt.relayed ? {} : { anonymousAs: peer }).pipe(
                Effect.timeoutFail({
                  duration: attempt.timeout,
                  onTimeout: () => new MeshDialError({ address: attempt.address, reason: "timed out" }),
                }),
              ),
            ),
            Effect.tapBoth({
              onFailure: (error) =>
                Effect.zipRight(
                  Ref.update(reasons, (all) => [...all, `${attempt.relayed ? "relay" : "direct"}: ${error.reason}`]),
                  remember(attempt, Option.some(error.reason)),
                ),
              onSuccess: () => remember(attempt, Option.none()),
            }),
            Effect.ensuring(Deferred.succeed(failed[i] as Deferred.Deferred<void>, undefined)),
          )
        const [first, ...rest] = attempts.map(run)
        return yield* Effect.raceAll([first as Effect.Effect<AuthenticatedPeer, MeshDialError>, ...rest]).pipe(
          Effect.catchAll(() =>
            Effect.flatMap(Ref.get(reasons), (all) =>
              Effect.fail(new MeshDialError({ address: peer, reason: all.join("; ") || "unreachable" })),
            ),
          ),
        )
      })

    // Callers that need the same peer at once share one attempt: a burst of parallel dials would open several
    // connections, and the remote's limit on new inbound connections per second would refuse some of them.
    const reaching = yield* Ref.make<ReadonlyMap<string, Deferred.Deferred<AuthenticatedPeer, MeshDialError>>>(
      new Map(),
    )
    const directFailures = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
    const hostScope = yield* Effect.scope

    const connect = (peer: string): Effect.Effect<AuthenticatedPeer, MeshDialError> =>
      Effect.gen(function* () {
        const fail = (reason: string) => Effect.fail(new MeshDialError({ address: peer, reason }))
        if (peer === peerId) return yield* fail("that is this peer")
        if ((yield* options.trust).isBanned(peer)) return yield* fail("peer is banned")
        // A peer admitted on an open connection has a well-formed id; only others are parsed (a decode of the key).
        const known = admissions.get(peer)
        if (known !== undefined && admissions.authenticatedConnections(peer).length > 0) return known
        if (Either.isLeft(Either.try(() => peerIdFromString(peer)))) return yield* fail("not a peer id")
        // A connection whose handshake is under way (the peer just dialled us, or a relay reconnect) is waited for:
        // a second connection beside it would be one more dial, and one more handshake, for the same peer.
        if (admissions.status(peer) === "pending" && (yield* admissions.awaitAuthenticated(peer, GATE_WAIT))) {
          const admitted = admissions.get(peer)
          if (admitted !== undefined && admissions.authenticatedConnections(peer).length > 0) return admitted
        }
        const mine = yield* Deferred.make<AuthenticatedPeer, MeshDialError>()
        const shared = yield* Ref.modify(reaching, (map) => {
          const found = map.get(peer)
          return found === undefined ? [mine, new Map(map).set(peer, mine)] : [found, map]
        })
        if (shared === mine) {
          // The attempt belongs to the host, not to whichever caller started it: a caller giving up must not fail
          // the others that wait on it.
          yield* reach(peer).pipe(
            Effect.exit,
            Effect.flatMap((exit) => Deferred.done(mine, exit)),
            Effect.ensuring(
              Ref.update(reaching, (map) => {
                const next = new Map(map)
                next.delete(peer)
                return next
              }),
            ),
            Effect.forkIn(hostScope),
          )
        }
        return yield* Deferred.await(shared)
      })

    /** DialPolicy's step 4: a peer reached only through a relay, dialled at its own addresses (nothing if direct). */
    const upgrade = (peer: string): Effect.Effect<void, MeshDialError> =>
      Effect.suspend(() =>
        admissions.authenticatedConnections(peer).some((c) => c.limits === undefined)
          ? Effect.void
          : Effect.asVoid(reach(peer, true)),
      )

    const openStream = (peer: string, protocol: string, options?: { readonly optimistic?: boolean }) =>
      Effect.gen(function* () {
        let connection = admissions.authenticatedConnections(peer)[0]
        if (connection === undefined) {
          yield* connect(peer)
          connection = admissions.authenticatedConnections(peer)[0]
        }
        if (connection === undefined) {
          return yield* new MeshDialError({ address: peer, reason: "connection closed after the handshake" })
        }
        const open = connection
        if (options?.optimistic === true) {
          const proposed = yield* Effect.tryPromise({
            try: () => OptimisticSelect.open(open, protocol),
            catch: (error) => new MeshDialError({ address: peer, reason: `stream refused: ${describe(error)}` }),
          })
          if (proposed !== undefined) return { stream: proposed, connection: open, proposed: protocol }
        }
        const stream = yield* Effect.tryPromise({
          try: (signal) => open.newStream(protocol, { signal, runOnLimitedConnection: true }),
          catch: (error) => new MeshDialError({ address: peer, reason: `stream refused: ${describe(error)}` }),
        })
        return { stream, connection: open }
      }).pipe(
        Spans.withSpan("mesh.stream.open", {
          kind: "client",
          captureStackTrace: false,
          attributes: { "mesh.peer.id": peer, "mesh.protocol": protocol },
        }),
      )

    const subscribe = (topic: string) =>
      Stream.asyncScoped<{ readonly from: string; readonly data: Uint8Array }>(
        (emit) =>
          Effect.gen(function* () {
            yield* Effect.acquireRelease(
              Effect.sync(() => topics.join(topic)),
              () => Effect.sync(() => topics.leave(topic)),
            )
            const pubsub = libp2p.services.pubsub
            const onMessage = (event: CustomEvent<GossipsubMessage>) => {
              const { msg, propagationSource } = event.detail
              if (msg.topic !== topic || msg.type !== "signed") return
              // The topic validator already decided; this re-check covers a peer dropped since then.
              if (!admissions.isAuthenticated(propagationSource.toString())) return
              void emit.single({ from: msg.from.toString(), data: msg.data })
            }
            yield* scoped(
              () => pubsub.addEventListener("gossipsub:message", onMessage),
              () => pubsub.removeEventListener("gossipsub:message", onMessage),
            )
          }),
        { bufferSize: SUBSCRIBER_BUFFER, strategy: "dropping" },
      )

    const service: MeshHostService = {
      peerId,
      libp2p,
      addresses: Effect.sync(() =>
        libp2p.getMultiaddrs().map((ma) => {
          const text = ma.toString()
          return text.endsWith(`/p2p/${peerId}`) ? text : `${text}/p2p/${peerId}`
        }),
      ),
      peers: Effect.sync(() => admissions.list()),
      // A credential past its expiry ends the peer's standing at once, for every request the peer side checks with
      // it, not at the next re-verification (which then drops its connections).
      peer: (id) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const known = admissions.get(id)
          if (known === undefined || known.expiresAtMs > now) return Option.fromNullable(known)
          // The recorded credential expired; the peer may hold its successor (a refresh whose re-authentication did
          // not reach us): ask once, shared by every request that meets it, before refusing.
          yield* Effect.ignore(reauthenticatePeer(id))
          return Option.filter(Option.fromNullable(admissions.get(id)), (after) => after.expiresAtMs > now)
        }),
      connections: (peer) => Effect.sync(() => admissions.authenticatedConnections(peer)),
      nextChange: Effect.suspend(() => admissions.nextChange()),
      dial,
      connect,
      upgrade,
      lastDirectFailure: (peer) => Effect.map(Ref.get(directFailures), (map) => Option.fromNullable(map.get(peer))),
      openStream,
      listen: (address) =>
        Effect.try({ try: () => multiaddr(address), catch: () => "not a multiaddr" }).pipe(
          Effect.flatMap((target) =>
            Effect.tryPromise({ try: () => libp2p.services.gate.listen([target]), catch: describe }),
          ),
          Effect.mapError((reason) => new MeshListenError({ address, reason })),
        ),
      disconnect: (peer) => drop(peer, "disconnected"),
      reverify,
      reauthenticate,
      publish: (topic, data) =>
        Effect.tryPromise(() => libp2p.services.pubsub.publish(topic, data)).pipe(
          Effect.asVoid,
          Effect.catchAll((error) =>
            Effect.logWarning("gossip publish failed").pipe(Effect.annotateLogs({ topic, error: describe(error) })),
          ),
        ),
      subscribe,
    }
    return service
  })

export const layer = (options: MeshHostOptions): Layer.Layer<MeshHost, MeshStartError> =>
  Layer.scoped(MeshHost, make(options))

/** The host of a router or node: keyed, credentialed and trusting as its membership says. */
export const fromMembership = (
  options: Pick<MeshHostOptions, "listen" | "announce" | "mode">,
): Layer.Layer<MeshHost, MeshStartError, Membership> =>
  Layer.scoped(
    MeshHost,
    Effect.flatMap(Membership, (member) =>
      make({
        ...options,
        seed: member.signer.seed,
        credential: member.credential,
        credentialChanges: member.credentialChanges,
        trust: member.trust,
      }),
    ),
  )

/** Something registered for the life of the scope (an event listener). */
const scoped = (add: () => void, remove: () => void): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(add), () => Effect.sync(remove))

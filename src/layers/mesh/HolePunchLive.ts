/**
 * The node's hole punching (services/mesh/HolePunch.ts): it learns its public address from the routers' identify
 * answers, watches for members reached only through a relay, and for each one where it is the initiator (once
 * identify over the relayed connection has told it the peer's own addresses) dials those addresses (MeshHost.upgrade,
 * DCUtR's unilateral upgrade: what makes a path direct on a flat network) and at the same time runs the
 * `/mesh/punch/1.0.0` exchange over the relayed connection, then dials as the plan says; the first direct connection
 * wins. The new connection is like any other: the gate and the mesh handshake admit it before anything uses it
 * (MeshHost prefers it once admitted), and the relayed connection stays open as the fallback. Routers run none of this.
 */
import { createServer } from "node:net"
import type { Connection, DialOptions, IdentifyResult, Stream } from "@libp2p/interface"
import { type Multiaddr, multiaddr } from "@multiformats/multiaddr"
import { Cause, Chunk, Clock, Duration, Effect, FiberSet, Layer, Option, Queue, Ref, Schedule } from "effect"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import type { DialPorts } from "../../p2p/DialPorts.js"
import * as Punch from "../../p2p/HolePunch.js"
import { HolePunch, type How, initiates, type PunchRecord, plan, retryDelayMs } from "../../services/mesh/HolePunch.js"
import { MeshHost, type MeshHostService } from "../../services/mesh/MeshHost.js"
import { Metrics } from "../../services/operations/Metrics.js"

/** The exchange (two messages each way over the relay) and each side's dial are bounded by these. */
const EXCHANGE_MS = 5_000
/** Long enough for the kernel's SYN retries at 1 and 3 s, which cover SYNs dropped before the other NAT opened. */
const DIAL_MS = 5_000
/** After the dial, the handshake on the new connection (its own deadline is 5 s for the dialer). */
const ADMIT_MS = 8_000
/** The least time between two exchanges a peer starts with us (it names the addresses we dial). */
const ANSWER_GAP_MS = 5_000
/** Addresses a punching dial tries at most (one per public address the peer's routers saw). */
const MAX_PUNCH_TARGETS = 2
/** How often the watcher looks again without a change of peers (for retries that fell due). */
const TICK = Duration.seconds(5)
/** How long an upgrade waits for identify over a new relayed connection (the peer's addresses) before going without. */
const IDENTIFY_WAIT_MS = 3_000

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const isDirect = (connection: Connection): boolean => connection.limits === undefined

/** A free local TCP port, from the kernel. Another process may take it before the dial; the dial then fails. */
const freePort = Effect.async<number, string>((resume) => {
  const server = createServer()
  server.once("error", (error) => resume(Effect.fail(describe(error))))
  server.listen(0, () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(port > 0 ? Effect.succeed(port) : Effect.fail("no free port")))
  })
})

const tcpAddress = (host: string, port: number): Multiaddr =>
  multiaddr(`/${host.includes(":") ? "ip6" : "ip4"}/${host}/tcp/${port}`)

const LOOPBACK = /^(127\.|::1$)/

/**
 * The punching dial names no peer to libp2p (the peer the noise handshake proved is checked after it): libp2p joins
 * every dial naming a peer to one under way for it, so a relayed dial to the same peer (MeshHost's plan, after the
 * router of the relayed path died) would wait behind a punch to an address that drops packets, for libp2p's whole
 * per-address timeout once the punch itself gave up (issue 51: 8 s to resume calls through the other router).
 */
const dialOptions = (signal: AbortSignal): DialOptions => ({ signal })

export const layer = Layer.scoped(
  HolePunch,
  Effect.gen(function* () {
    const host = yield* MeshHost
    const metrics = yield* Metrics
    const libp2p = host.libp2p
    const observed = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
    const records = yield* Ref.make<ReadonlyMap<string, PunchRecord>>(new Map())
    const service = {
      observed: Effect.map(Ref.get(observed), (byRouter) => [...new Set(byRouter.values())]),
      record: (peer: string) => Effect.map(Ref.get(records), (all) => Option.fromNullable(all.get(peer))),
    }
    const ports = libp2p.services.dialPorts
    if (ports === undefined) return service

    const direct = metrics.counter(
      "mesh_node_direct_connections_total",
      "Relayed member connections made direct, by how: dialled (the peer was reachable) or hole_punched.",
    )
    const punches = metrics.counter("mesh_node_hole_punches_total", "Upgrade attempts to a direct path, by outcome.")
    const runFork = yield* FiberSet.makeRuntime<never>()
    const busy = yield* Ref.make<ReadonlySet<string>>(new Set())
    /** Relayed connections identify has run on (their peer's addresses are in the peer store), by connection id. */
    const identified = yield* Ref.make<ReadonlySet<string>>(new Set())
    const wake = yield* Queue.sliding<void>(1)

    const onIdentify = (event: CustomEvent<IdentifyResult>) => {
      const { peerId, observedAddr, connection } = event.detail
      if (!isDirect(connection)) {
        // The peer's listen addresses just arrived: an upgrade of this relayed path can dial them now.
        runFork(
          Effect.zipRight(
            Ref.update(identified, (ids) => new Set(ids).add(connection.id)),
            wake.offer(undefined),
          ),
        )
        return
      }
      // Routers tell us where they see us from; that host is our NAT's public address (or our own, unNATed).
      if (observedAddr === undefined) return
      const seen = Punch.hostOf(observedAddr)
      if (seen === undefined || LOOPBACK.test(seen)) return
      const router = peerId.toString()
      runFork(
        Effect.flatMap(host.peer(router), (peer) =>
          Option.isSome(peer) && peer.value.role === ROUTER_ROLE
            ? Ref.update(observed, (map) => new Map(map).set(router, seen))
            : Effect.void,
        ),
      )
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => libp2p.addEventListener("peer:identify", onIdentify)),
      () => Effect.sync(() => libp2p.removeEventListener("peer:identify", onIdentify)),
    )

    /** Our side of the offer: the public hosts at a fresh port our punching dial will leave from, and where we listen. */
    const offer = Effect.gen(function* () {
      const hosts = yield* service.observed
      const port = yield* freePort
      const lanAddrs = libp2p
        .getMultiaddrs()
        .map(Punch.plainOf)
        .filter((a): a is Multiaddr => a !== undefined && !LOOPBACK.test(Punch.hostOf(a) ?? ""))
      return { port, hosts, offer: { addrs: hosts.map((h) => tcpAddress(h, port)), lanAddrs } }
    })

    const finish = (peer: string, outcome: { how: How } | { reason: string }) =>
      Effect.gen(function* () {
        const atMs = yield* Clock.currentTimeMillis
        const failed = "reason" in outcome
        punches.inc({ outcome: failed ? "failed" : "direct" })
        if (!failed) direct.inc({ how: outcome.how })
        yield* failed
          ? Effect.logDebug("path to peer stays relayed").pipe(Effect.annotateLogs({ peer, reason: outcome.reason }))
          : Effect.logInfo("path to peer made direct").pipe(Effect.annotateLogs({ peer, how: outcome.how }))
        yield* Ref.update(records, (map) => {
          const failures = failed ? (map.get(peer)?.failures ?? 0) + 1 : 0
          const record: PunchRecord = failed
            ? { atMs, result: "failed", reason: outcome.reason, failures }
            : { atMs, result: "direct", how: outcome.how, failures }
          return new Map(map).set(peer, record)
        })
      })

    /** Waits (bounded) until a direct connection to the peer has passed the handshake. */
    const admittedDirect = (peer: string) =>
      host.connections(peer).pipe(
        Effect.map((all) => all.some(isDirect)),
        Effect.repeat({ until: (ok) => ok, schedule: Schedule.spaced(Duration.millis(100)) }),
        Effect.timeoutFail({ duration: Duration.millis(ADMIT_MS), onTimeout: () => "the handshake did not admit it" }),
      )

    /** Dials the peer at the addresses, from `localPort` when given; `initiator: false` answers the noise handshake. */
    const dial = (
      peer: string,
      targets: ReadonlyArray<Multiaddr>,
      options: { localPort?: number; initiator: boolean },
    ) =>
      Effect.acquireUseRelease(
        Effect.sync(() =>
          options.localPort === undefined
            ? []
            : targets.map((t) =>
                (ports as DialPorts).bind(t, { localPort: options.localPort as number, initiator: options.initiator }),
              ),
        ),
        () =>
          Effect.tryPromise({
            try: (signal) =>
              libp2p.dial([...targets], dialOptions(AbortSignal.any([signal, AbortSignal.timeout(DIAL_MS)]))),
            catch: (error) => `no answer from ${targets.map(String).join(", ")}: ${describe(error)}`,
          }).pipe(
            Effect.flatMap((connection) =>
              connection.remotePeer.toString() === peer
                ? Effect.succeed(connection)
                : Effect.zipRight(
                    Effect.promise(() => connection.close().catch(() => undefined)),
                    Effect.fail("another peer answered at that address"),
                  ),
            ),
          ),
        (unbinds) => Effect.sync(() => unbinds.forEach((unbind) => unbind())),
      )

    /** Carries out the plan both sides reached; succeeds with how the connection became direct. */
    const execute = (
      peer: string,
      mine: Effect.Effect.Success<typeof offer>,
      theirs: Punch.Offer,
      initiator: boolean,
      rttMs: number,
    ): Effect.Effect<How | undefined, string> => {
      const theirHosts = theirs.addrs.map(Punch.hostOf).filter((h): h is string => h !== undefined)
      const listens = (lan: ReadonlyArray<Multiaddr>, hosts: ReadonlyArray<string>) =>
        lan.some((a) => hosts.includes(Punch.hostOf(a) ?? ""))
      const decided = plan({
        mine: { hosts: mine.hosts, listensPublicly: listens(mine.offer.lanAddrs, mine.hosts) },
        theirs: { hosts: theirHosts, listensPublicly: listens(theirs.lanAddrs, theirHosts) },
        initiator,
      })
      switch (decided) {
        case "none":
          return Effect.fail(
            mine.hosts.length === 0
              ? "no router has told this node its public address yet"
              : "the peer offered no public address",
          )
        case "wait":
          return Effect.as(admittedDirect(peer), "dialled" as const)
        case "lan":
          return Effect.as(
            Effect.zipRight(dial(peer, theirs.lanAddrs, { initiator: true }), admittedDirect(peer)),
            "dialled" as const,
          )
        case "dial":
          return Effect.as(
            Effect.zipRight(
              dial(
                peer,
                theirs.lanAddrs.filter((a) => theirHosts.includes(Punch.hostOf(a) ?? "")),
                { initiator: true },
              ),
              admittedDirect(peer),
            ),
            "dialled" as const,
          )
        case "punch":
          // DCUtR's roles: the initiator dials half a round trip after its SYNC and answers the noise handshake.
          return Effect.as(
            Effect.zipRight(
              Effect.zipRight(
                initiator ? Effect.sleep(Duration.millis(rttMs / 2)) : Effect.void,
                dial(peer, theirs.addrs.slice(0, MAX_PUNCH_TARGETS), { localPort: mine.port, initiator: !initiator }),
              ),
              admittedDirect(peer),
            ),
            "hole_punched" as const,
          )
      }
    }

    const withStream = <A>(stream: Stream, use: (side: Punch.Framed, signal: AbortSignal) => Promise<A>) =>
      Effect.tryPromise({
        try: (signal) => use(Punch.framed(stream), AbortSignal.any([signal, AbortSignal.timeout(EXCHANGE_MS)])),
        catch: (error) => `the exchange over the relay failed: ${describe(error)}`,
      }).pipe(Effect.ensuring(Effect.promise(() => stream.close().catch(() => stream.abort(new Error("closed"))))))

    /** One attempt at most per peer at a time, on either side. */
    const exclusive = (peer: string, attempt: Effect.Effect<void>) =>
      Effect.flatMap(
        Ref.modify(busy, (set): [boolean, ReadonlySet<string>] =>
          set.has(peer) ? [false, set] : [true, new Set(set).add(peer)],
        ),
        (mine) =>
          mine
            ? Effect.ensuring(
                attempt,
                Ref.update(busy, (set) => {
                  const next = new Set(set)
                  next.delete(peer)
                  return next
                }),
              )
            : Effect.void,
      )

    /** The punch exchange over the relayed connection, and the dials its plan says. */
    const punch = (peer: string, relayed: Connection) =>
      Effect.gen(function* () {
        const mine = yield* offer
        if (mine.hosts.length === 0) return yield* Effect.fail("no router has told this node its public address yet")
        const stream = yield* Effect.tryPromise({
          try: (signal) => relayed.newStream(Punch.PROTOCOL, { signal, runOnLimitedConnection: true }),
          catch: (error) => `the peer refused the exchange: ${describe(error)}`,
        })
        const started = yield* Clock.currentTimeMillis
        const theirs = yield* withStream(stream, async (side, signal) => {
          await side.send({ type: "connect", offer: mine.offer }, signal)
          const answer = await Punch.expectConnect(side, signal)
          await side.send({ type: "sync" }, signal)
          return answer
        })
        const rtt = (yield* Clock.currentTimeMillis) - started
        return yield* execute(peer, mine, theirs, true, rtt)
      })

    /**
     * The peer's own addresses dialled and the punch, at once: on a flat network the dial wins; across NATs the punch
     * does, without waiting for dials to another home's private addresses to time out.
     */
    const initiate = (peer: string, relayed: Connection) =>
      exclusive(
        peer,
        Effect.race(
          host.upgrade(peer).pipe(
            Effect.as("dialled" as const),
            Effect.mapError((error) => `direct dial: ${error.reason}`),
          ),
          Effect.mapError(punch(peer, relayed), (reason) => `hole punch: ${reason}`),
        ).pipe(
          Effect.matchCauseEffect({
            onFailure: (cause) => {
              const reasons = Chunk.toReadonlyArray(Cause.failures(cause))
              return reasons.length === 0 ? Effect.void : finish(peer, { reason: reasons.join("; ") })
            },
            onSuccess: (how) => (how === undefined ? Effect.void : finish(peer, { how })),
          }),
        ),
      )

    const respond = (stream: Stream, connection: Connection) => {
      const peer = connection.remotePeer.toString()
      return exclusive(
        peer,
        Effect.gen(function* () {
          // A peer names the addresses we dial: one exchange per ANSWER_GAP at most, whatever it asks.
          const now = yield* Clock.currentTimeMillis
          const last = (yield* Ref.get(records)).get(peer)
          if (last !== undefined && now < last.atMs + ANSWER_GAP_MS) {
            stream.abort(new Error("too soon after the last attempt"))
            return undefined
          }
          const mine = yield* offer
          const theirs = yield* withStream(stream, async (side, signal) => {
            const offered = await Punch.expectConnect(side, signal)
            await side.send({ type: "connect", offer: mine.offer }, signal)
            await Punch.expectSync(side, signal)
            return offered
          })
          return yield* execute(peer, mine, theirs, false, 0)
        }).pipe(
          Effect.matchEffect({
            // The initiator ends the exchange when its dial to our own addresses made the path direct first.
            onFailure: (reason) =>
              Effect.flatMap(host.connections(peer), (open) =>
                open.some(isDirect) ? Effect.void : finish(peer, { reason: String(reason) }),
              ),
            onSuccess: (how) => (how === undefined ? Effect.void : finish(peer, { how })),
          }),
        ),
      )
    }

    yield* Effect.acquireRelease(
      Effect.promise(() =>
        libp2p.handle(
          Punch.PROTOCOL,
          (stream, connection) => {
            if (isDirect(connection)) return stream.abort(new Error("the connection is already direct"))
            runFork(respond(stream, connection))
          },
          { runOnLimitedConnection: true, maxInboundStreams: 4 },
        ),
      ),
      () => Effect.promise(() => libp2p.unhandle(Punch.PROTOCOL).catch(() => undefined)),
    )

    /** Members this node reaches only through a relay and should start an upgrade with now. */
    const due = (self: MeshHostService) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const known = yield* Ref.get(records)
        const running = yield* Ref.get(busy)
        const seen = yield* Ref.get(identified)
        const out: Array<{ peer: string; relayed: Connection }> = []
        const relayedIds = new Set<string>()
        for (const peer of yield* self.peers) {
          if (peer.role === ROUTER_ROLE) continue
          const open = yield* self.connections(peer.peerId)
          const relayed = open[0]
          if (relayed === undefined || isDirect(relayed)) continue
          for (const c of open) relayedIds.add(c.id)
          if (running.has(peer.peerId) || !initiates(self.peerId, peer.peerId)) continue
          if (!seen.has(relayed.id) && now < relayed.timeline.open + IDENTIFY_WAIT_MS) continue
          const last = known.get(peer.peerId)
          if (last !== undefined && last.result === "failed" && now < last.atMs + retryDelayMs(last.failures)) continue
          out.push({ peer: peer.peerId, relayed })
        }
        // Only relayed connections still open are remembered.
        yield* Ref.update(identified, (ids) => new Set([...ids].filter((id) => relayedIds.has(id))))
        return out
      })

    yield* due(host).pipe(
      Effect.flatMap((peers) =>
        Effect.forEach(peers, ({ peer, relayed }) => Effect.sync(() => runFork(initiate(peer, relayed)))),
      ),
      Effect.zipRight(Effect.raceAll([host.nextChange, wake.take, Effect.sleep(TICK)])),
      Effect.forever,
      Effect.forkScoped,
    )
    return service
  }),
)

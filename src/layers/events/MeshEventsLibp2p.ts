/**
 * MeshEvents published to the mesh. The control plane joins the mesh as a peer of its own (a fresh key per process,
 * a credential it signs for itself with role `mesh:role:control-plane`), dials the routers holding live leases and
 * keeps dialing those it is not connected to every `--mesh-reconnect-interval`, and publishes each event signed with
 * its current signing key (a key rotation is signed with the key it replaces, which every receiver already trusts).
 *
 * The host starts only once a router holds a lease: a control plane without routers runs no libp2p at all.
 */
import { Clock, Duration, Effect, Layer, Option, Ref, Scope, Stream } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import * as MeshEventCodec from "../../domain/MeshEventCodec.js"
import * as PeerKey from "../../domain/PeerKey.js"
import { ROUTER_ROLE } from "../../domain/Policy.js"
import { type MeshEvent, MeshEvents } from "../../services/events/MeshEvents.js"
import { Credentials } from "../../services/identity/Credentials.js"
import { KeyRing } from "../../services/identity/KeyRing.js"
import type { MeshHostService } from "../../services/mesh/MeshHost.js"
import { ChangeFeed } from "../../services/operations/ChangeFeed.js"
import { Leases } from "../../services/routers/Leases.js"
import * as MeshHostLive from "../mesh/MeshHostLive.js"
import * as MeshEventsMemory from "./MeshEventsMemory.js"

/** How soon a leased router that could not be reached is dialed again. */
const RETRY = Duration.seconds(2)

export const CONTROL_PLANE_ROLE = "mesh:role:control-plane"

export const layer = Layer.scoped(
  MeshEvents,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const keyRing = yield* KeyRing
    const credentials = yield* Credentials
    const leases = yield* Leases
    const feed = yield* ChangeFeed
    const memory = yield* MeshEventsMemory.make
    const scope = yield* Effect.scope
    const identity = PeerKey.generate()
    const credential = yield* Ref.make<{
      readonly bytes: Uint8Array
      readonly keyId: number
      readonly issuedAt: number
      readonly expiresAt: number
    }>({ bytes: new Uint8Array(0), keyId: -1, issuedAt: 0, expiresAt: 0 })
    const host = yield* Ref.make(Option.none<MeshHostService>())

    /** Our own credential, re-signed when half its lifetime has passed or the signing key rotated. */
    const currentCredential = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const held = yield* Ref.get(credential)
      const { current } = yield* keyRing.snapshot
      if (now >= held.issuedAt + (held.expiresAt - held.issuedAt) / 2 || held.keyId !== current.id) {
        const minted = yield* credentials.mint({ peerId: identity.peerId, role: CONTROL_PLANE_ROLE, labels: {} })
        yield* Ref.set(credential, {
          bytes: minted.bytes,
          keyId: current.id,
          issuedAt: now,
          expiresAt: minted.expiresAtMs,
        })
        return minted.bytes
      }
      return held.bytes
    })

    const ensureHost = Effect.gen(function* () {
      const existing = yield* Ref.get(host)
      if (Option.isSome(existing)) return existing.value
      const started = yield* MeshHostLive.make({
        seed: identity.seed,
        credential: currentCredential,
        trust: Effect.map(keyRing.snapshot, (snapshot) => ({ keyFor: snapshot.publicKeyFor, isBanned: () => false })),
        listen: [],
        mode: "node",
      }).pipe(Scope.extend(scope))
      yield* Ref.set(host, Option.some(started))
      yield* Effect.logInfo("event publisher joined the mesh").pipe(Effect.annotateLogs({ peer_id: started.peerId }))
      return started
    })

    /** Dials every leased router we are not connected to: none leased, all linked, or some still missing. */
    const connect = Effect.gen(function* () {
      const live = yield* leases.live
      if (live.length === 0) return "none" as const
      const mesh = yield* ensureHost
      const connected = new Set((yield* mesh.peers).map((p) => p.peerId))
      let missing = 0
      for (const lease of live) {
        if (connected.has(lease.peerId)) continue
        let reached = false
        for (const address of lease.addresses) {
          reached = yield* mesh.dial(address, { requireRole: ROUTER_ROLE }).pipe(
            Effect.as(true),
            Effect.catchAll((error) => Effect.as(Effect.logDebug("router not reachable", error.message), false)),
          )
          if (reached) break
        }
        if (!reached) missing++
      }
      return missing === 0 ? ("linked" as const) : ("missing" as const)
    })

    const interval = Duration.max(config.meshReconnectInterval, Duration.seconds(1))
    // Wakes on lease changes; on the reconnect interval while linked to every leased router, and when a link drops;
    // every RETRY while a leased router is missing, so that one back from a restart carries events within seconds.
    const loop = Effect.gen(function* () {
      const version = yield* feed.version
      const state = yield* connect.pipe(
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logWarning("could not reach routers", cause), "missing" as const),
        ),
      )
      const mesh = yield* Ref.get(host)
      const dropped = Option.match(mesh, { onNone: () => Effect.never, onSome: (m) => m.nextChange })
      yield* state === "none"
        ? feed.changedSince(version)
        : Effect.raceAll([
            Effect.sleep(state === "linked" ? interval : RETRY),
            feed.changedSince(version),
            state === "linked" ? dropped : Effect.never,
          ])
    }).pipe(Effect.forever)
    yield* Effect.forkScoped(loop)

    const send = (event: MeshEvent, signer: Uint8Array) =>
      Effect.gen(function* () {
        const mesh = yield* Ref.get(host)
        if (Option.isNone(mesh)) return
        const now = yield* Clock.currentTimeMillis
        yield* mesh.value.publish(MeshEventCodec.TOPIC, MeshEventCodec.encode(event, signer, now))
      })

    const publish = (event: MeshEvent) =>
      Effect.gen(function* () {
        if (!(yield* memory.publish(event))) return
        const snapshot = yield* keyRing.snapshot
        yield* send(event, snapshot.current.seed)
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("mesh event not published", cause)))

    // Key rotations done by this replica: signed by the key they replace, which receivers already trust.
    yield* keyRing.rotations.pipe(
      Stream.runForEach(({ current, previous }) =>
        Effect.gen(function* () {
          const event: MeshEvent = { type: "key_rotation", publicKey: current.publicKey, sequence: current.id }
          if (yield* memory.publish(event)) yield* send(event, (previous ?? current).seed)
        }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("key rotation not announced", cause))),
      ),
      Effect.forkScoped,
    )

    return { publish, recent: memory.recent }
  }),
)

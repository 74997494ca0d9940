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

    /** Dials every leased router address we are not connected to. */
    const connect = Effect.gen(function* () {
      const live = yield* leases.live
      if (live.length === 0) return false
      const mesh = yield* ensureHost
      const connected = new Set((yield* mesh.peers).map((p) => p.peerId))
      for (const lease of live) {
        if (connected.has(lease.peerId)) continue
        for (const address of lease.addresses) {
          const ok = yield* mesh.dial(address, { requireRole: ROUTER_ROLE }).pipe(
            Effect.as(true),
            Effect.catchAll((error) => Effect.as(Effect.logDebug("router not reachable", error.message), false)),
          )
          if (ok) break
        }
      }
      return true
    })

    const interval = Duration.max(config.meshReconnectInterval, Duration.seconds(1))
    // Wakes on lease changes, and on the reconnect interval while there are routers to reach.
    const loop = Effect.gen(function* () {
      const version = yield* feed.version
      const routers = yield* connect.pipe(
        Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("could not reach routers", cause), true)),
      )
      yield* routers ? Effect.race(Effect.sleep(interval), feed.changedSince(version)) : feed.changedSince(version)
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

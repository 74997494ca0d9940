/**
 * Puts an enrolled node straight into a control plane's records, as an approved enrollment would leave it, for tests
 * and benchmarks about what happens after enrollment (refresh, rotation, retention) without an enrollment flow.
 */
import { Clock, Effect } from "effect"
import * as PeerKey from "../domain/PeerKey.js"
import { Credentials } from "../services/identity/Credentials.js"
import { Nodes } from "../services/nodes/Nodes.js"

export interface Options {
  readonly role?: string
  readonly labels?: Record<string, string>
  readonly autonomousRecovery?: boolean
  readonly sessionExpiresAt?: number
  readonly banned?: boolean
}

export interface EnrolledNode {
  readonly peer: ReturnType<typeof PeerKey.generate>
  readonly credential: Uint8Array
}

export const enroll = (options: Options = {}): Effect.Effect<EnrolledNode, never, Credentials | Nodes> =>
  Effect.gen(function* () {
    const credentials = yield* Credentials
    const nodes = yield* Nodes
    const peer = PeerKey.generate()
    const now = yield* Clock.currentTimeMillis
    const role = options.role ?? "mesh:role:node"
    const labels = options.labels ?? {}
    const minted = yield* credentials.mint({ peerId: peer.peerId, role, labels })
    yield* nodes.create({
      peerId: peer.peerId,
      publicKey: peer.publicKey,
      role,
      labels,
      enrollmentType: "bootstrap",
      identity: undefined,
      ownerId: undefined,
      autonomousRecovery: options.autonomousRecovery ?? false,
      credentialDigest: minted.digest,
      credentialExpiresAt: minted.expiresAtMs,
      sessionExpiresAt: options.sessionExpiresAt,
      enrolledAt: now,
      refreshedAt: undefined,
      banned: options.banned ?? false,
      bannedAt: options.banned === true ? now : undefined,
    })
    return { peer, credential: minted.bytes }
  })

/**
 * Puts an enrolled node straight into a control plane's records, for suites that test what happens after enrollment
 * (refresh, rotation) without going through an enrollment flow.
 */
import { Clock, Context, Effect } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { Credentials } from "../../src/services/identity/Credentials.js"
import { Nodes } from "../../src/services/nodes/Nodes.js"
import type { ControlPlaneHarness } from "../../src/testing/ControlPlaneHarness.js"
import type { Peer } from "../../src/testing/MeshClient.js"

export interface EnrolledNode {
  readonly peer: Peer
  readonly credential: Uint8Array
}

export const enrollDirectly = (
  cp: ControlPlaneHarness,
  options: {
    readonly role?: string
    readonly labels?: Record<string, string>
    readonly autonomousRecovery?: boolean
    readonly sessionExpiresAt?: number
    readonly banned?: boolean
  } = {},
) =>
  Effect.gen(function* () {
    const peer = PeerKey.generate()
    const credentials = Context.get(cp.context, Credentials)
    const nodes = Context.get(cp.context, Nodes)
    const now = yield* Clock.currentTimeMillis
    const role = options.role ?? "mesh:role:node"
    const labels = options.labels ?? {}
    const minted = yield* credentials.mint({ peerId: peer.peerId, role, labels })
    yield* nodes.save({
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
    return { peer, credential: minted.bytes } satisfies EnrolledNode
  })

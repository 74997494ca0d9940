/**
 * A bare mesh peer for tests: a MeshHost in node mode whose credential and trust come from wherever the test wants
 * (a real enrollment, a forged or expired credential, none at all), to probe what routers accept.
 */
import { Effect, type Scope } from "effect"
import * as MeshHostLive from "../layers/mesh/MeshHostLive.js"
import type { MeshTrust } from "../p2p/Trust.js"
import type { MeshHostService } from "../services/mesh/MeshHost.js"

export interface TestPeerOptions {
  readonly seed: Uint8Array
  readonly credential: Uint8Array
  readonly trust: MeshTrust
}

export const make = (options: TestPeerOptions): Effect.Effect<MeshHostService, unknown, Scope.Scope> =>
  MeshHostLive.make({
    seed: options.seed,
    credential: Effect.succeed(options.credential),
    trust: Effect.succeed(options.trust),
    listen: ["/ip4/127.0.0.1/tcp/0"],
    mode: "node",
  })

/** Trust everything signed by the given keys, ban nobody. */
export const trusting = (keys: ReadonlyArray<{ readonly id: number; readonly publicKey: Uint8Array }>): MeshTrust => {
  const byId = new Map(keys.map((k) => [k.id, k.publicKey]))
  return { keyFor: (id) => byId.get(id), isBanned: () => false }
}

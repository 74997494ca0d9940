/** Mesh test helpers: enrolled test peers and waits in real time. */
import { Duration, Effect, Either, Schedule } from "effect"
import * as KeySet from "../../src/domain/KeySet.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import type { ControlPlaneHarness } from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as TestPeer from "../../src/testing/TestPeer.js"
import { mintToken } from "../support/admin.js"

/** Keys from /keys, trusted on the strength of the key an enrollment answer carried. */
export const controlPlaneKeys = (cp: ControlPlaneHarness, firstKey: Uint8Array) =>
  Effect.flatMap(MeshClient.request(`${cp.url}/keys`), (answer) =>
    Effect.sync(() => Either.getOrThrow(KeySet.verify(answer.body, [firstKey], Date.now()))),
  )

/** A node enrolled through the control plane (auto-approve), as a bare mesh peer. */
export const enrolledPeer = (cp: ControlPlaneHarness, labels: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const token = yield* mintToken(cp)
    const peer = PeerKey.generate()
    const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token, { labels }))
    const keys = yield* controlPlaneKeys(cp, enrolled.controlPlanePublicKey)
    const host = yield* TestPeer.make({
      seed: peer.seed,
      credential: enrolled.biscuitToken,
      trust: TestPeer.trusting(keys),
    })
    return { peer, host, credential: enrolled.biscuitToken, keys }
  })

/** The router's first listening address; a router without one cannot serve the test. */
export const firstAddress = (router: { readonly addresses: ReadonlyArray<string> }) => {
  const [address] = router.addresses
  return address === undefined ? Effect.dieMessage("router has no address") : Effect.succeed(address)
}

/** Retries `effect` until it succeeds with a value `predicate` accepts, for up to `seconds`. */
export const within = <A, E, R>(
  seconds: number,
  effect: Effect.Effect<A, E, R>,
  predicate: (a: A) => boolean = () => true,
) =>
  effect.pipe(
    Effect.filterOrFail(predicate, () => new Error("condition not met")),
    Effect.retry(Schedule.spaced(Duration.millis(100)).pipe(Schedule.upTo(Duration.seconds(seconds)))),
  )

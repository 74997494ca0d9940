/**
 * A bare mesh peer in the test process that asks the routers' DHT directly, with no gossip to help it: what a node
 * finds from provider records alone. It enrolls like any node, dials the given routers before each search and
 * returns the providers the DHT names.
 */
import { Duration, Effect, Either } from "effect"
import * as KeySet from "../../src/domain/KeySet.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as ServiceKeys from "../../src/domain/ServiceKeys.js"
import type { ServiceType } from "../../src/domain/ServiceType.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as TestPeer from "../../src/testing/TestPeer.js"
import type { ControlPlaneProcess } from "./ControlPlaneProcess.js"
import { mintToken } from "./Requests.js"

export const make = (cp: ControlPlaneProcess) =>
  Effect.gen(function* () {
    const token = yield* mintToken(cp)
    const peer = PeerKey.generate()
    const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
    const keys = yield* Effect.flatMap(MeshClient.request(`${cp.url}/keys`), (answer) =>
      Effect.sync(() => Either.getOrThrow(KeySet.verify(answer.body, [enrolled.controlPlanePublicKey], Date.now()))),
    )
    const host = yield* TestPeer.make({
      seed: peer.seed,
      credential: enrolled.biscuitToken,
      trust: TestPeer.trusting(keys),
    })

    /** Providers of the type (and name) the DHT names within `timeout`, after dialing each router address. */
    const providers = (
      routers: ReadonlyArray<string>,
      type: ServiceType,
      name?: string,
      timeout = Duration.seconds(2),
    ) =>
      Effect.gen(function* () {
        yield* Effect.forEach(routers, (address) => Effect.ignore(host.dial(address)), { concurrency: "unbounded" })
        const found = new Set<string>()
        yield* Effect.tryPromise(async (signal) => {
          for await (const info of host.libp2p.contentRouting.findProviders(ServiceKeys.cid(type, name), { signal })) {
            found.add(info.id.toString())
          }
        }).pipe(Effect.timeout(timeout), Effect.ignore)
        return found
      })

    return { providers }
  })

/**
 * The control plane's credential loads, shared by the throughput benchmarks (`refresh`, `enroll`) and the CPU one
 * (`control-plane-cpu`), so that both measure the same requests.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Challenge from "../../src/domain/Challenge.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import {
  BootstrapEnrollRequestSchema,
  TokenRefreshRequestSchema,
  TokenRefreshResponseSchema,
} from "../../src/gen/mesh_pb.js"
import type { RunningControlPlane } from "./controlPlane.js"
import * as Load from "./load.js"
import type { SeededNode } from "./seed.js"

/** One round of refreshes: each node refreshes in a loop of its own, carrying its newest credential forward. */
export const refreshing = (
  cp: RunningControlPlane,
  nodes: ReadonlyArray<SeededNode>,
  seconds: number,
): Promise<ReadonlyArray<Load.LoadResult>> =>
  Promise.all(
    nodes.map((node) =>
      Load.run({
        url: `${cp.url}/refresh`,
        method: "POST",
        concurrency: 1,
        seconds,
        headers: { "content-type": "application/x-protobuf" },
        headersFor: () => ({ authorization: `Bearer ${Biscuit.toText(node.credential)}` }),
        body: () => {
          const now = BigInt(Date.now())
          return toBinary(
            TokenRefreshRequestSchema,
            create(TokenRefreshRequestSchema, {
              peerId: node.peer.peerId,
              challengeUnixMs: now,
              challengeSignature: Challenge.sign(node.peer.seed, "refresh", node.peer.peerId, now),
            }),
          )
        },
        onResponse: (body) => {
          node.credential = fromBinary(TokenRefreshResponseSchema, body).biscuitToken
        },
      }),
    ),
  )

/** Keys for new peers, made before a load's clock starts. */
export const peerKeys = (count: number) =>
  Array.from({ length: count }, () => {
    const peer = PeerKey.generate()
    return { ...peer, publicKeyProtobuf: PeerKey.toProtobuf(peer.publicKey) }
  })

/** Enrollments with `token` for `seconds`, each a new peer of `keys`; the load fails if it runs out of them. */
export const enrolling = (
  cp: RunningControlPlane,
  token: string,
  keys: ReturnType<typeof peerKeys>,
  options: { readonly concurrency: number; readonly seconds: number },
): Promise<Load.LoadResult> => {
  let next = 0
  return Load.run({
    url: `${cp.url}/enroll`,
    method: "POST",
    concurrency: options.concurrency,
    seconds: options.seconds,
    headers: { "content-type": "application/x-protobuf" },
    body: () => {
      const peer = keys[next++]
      if (peer === undefined) throw new Error("ran out of prepared peers")
      const now = BigInt(Date.now())
      return toBinary(
        BootstrapEnrollRequestSchema,
        create(BootstrapEnrollRequestSchema, {
          bootstrapToken: token,
          peerId: peer.peerId,
          publicKey: peer.publicKeyProtobuf,
          challengeUnixMs: now,
          challengeSignature: Challenge.sign(peer.seed, "enroll", peer.peerId, now),
        }),
      )
    },
  })
}

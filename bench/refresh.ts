/**
 * Refresh throughput and latency over HTTP, on sqlite and postgres, next to the crypto-bound ceiling: the in-process
 * cost of exactly the cryptography one refresh needs (challenge verify, biscuit verify, biscuit mint), one core.
 * Each load worker is one node that refreshes in a loop, carrying its newest credential forward.
 */

import { performance } from "node:perf_hooks"
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { Clock, Context, Effect } from "effect"
import * as Biscuit from "../src/crypto/Biscuit.js"
import * as Ed25519 from "../src/crypto/Ed25519.js"
import * as Challenge from "../src/domain/Challenge.js"
import * as PeerKey from "../src/domain/PeerKey.js"
import { TokenRefreshRequestSchema, TokenRefreshResponseSchema } from "../src/gen/mesh_pb.js"
import { Credentials } from "../src/services/identity/Credentials.js"
import { Nodes } from "../src/services/nodes/Nodes.js"
import { type Driver, launch, pgAvailable } from "./lib/controlPlane.js"
import * as Load from "./lib/load.js"
import type { Entry } from "./lib/report.js"

const CONCURRENCY = 16
const SECONDS = 5

/** Refreshes per second that the cryptography alone allows on one core. */
const cryptoCeiling = (): number => {
  const key = { id: 1, ...Ed25519.generate() }
  const peer = PeerKey.generate()
  const facts = { peerId: peer.peerId, role: "mesh:role:node", labels: { zone: "eu" } }
  let credential = Biscuit.mint({ ...facts, expiresAtMs: Date.now() + 86_400_000 }, key)
  const run = (n: number) => {
    for (let i = 0; i < n; i++) {
      const now = Date.now()
      const signature = Challenge.sign(peer.seed, "refresh", peer.peerId, now)
      // The signing above is the client's work, but verifying it is ours:
      Challenge.check({
        endpoint: "refresh",
        peerId: peer.peerId,
        publicKey: peer.publicKey,
        unixMs: now,
        signature,
        nowMs: now,
      })
      Biscuit.verify(credential, () => key.publicKey, now, { allowExpired: true })
      credential = Biscuit.mint({ ...facts, expiresAtMs: now + 86_400_000 }, key)
    }
  }
  run(300)
  const n = 3000
  // Exclude the client-side signing from the ceiling: measure it alone and subtract.
  const t0 = performance.now()
  run(n)
  const total = performance.now() - t0
  const s0 = performance.now()
  for (let i = 0; i < n; i++) Challenge.sign(peer.seed, "refresh", peer.peerId, i)
  const signing = performance.now() - s0
  return n / ((total - signing) / 1000)
}

const seedNodes = (cp: Awaited<ReturnType<typeof launch>>, count: number) =>
  cp.runtime.runPromise(
    Effect.gen(function* () {
      const credentials = yield* Credentials
      const nodes = yield* Nodes
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.forEach(Array.from({ length: count }), () =>
        Effect.gen(function* () {
          const peer = PeerKey.generate()
          const minted = yield* credentials.mint({
            peerId: peer.peerId,
            role: "mesh:role:node",
            labels: { zone: "eu" },
          })
          yield* nodes.save({
            peerId: peer.peerId,
            publicKey: peer.publicKey,
            role: "mesh:role:node",
            labels: { zone: "eu" },
            enrollmentType: "bootstrap",
            identity: undefined,
            ownerId: undefined,
            autonomousRecovery: false,
            credentialDigest: minted.digest,
            credentialExpiresAt: minted.expiresAtMs,
            sessionExpiresAt: undefined,
            enrolledAt: now,
            refreshedAt: undefined,
            banned: false,
            bannedAt: undefined,
          })
          return { peer, credential: minted.bytes }
        }),
      )
    }),
  )

const measure = async (driver: Driver, ceiling: number, goal: number): Promise<Entry> => {
  const cp = await launch(driver)
  try {
    const seeded = await seedNodes(cp, CONCURRENCY)
    // Each worker owns one node; `next` hands workers their node in turn.
    let turn = 0
    const state = seeded.map((n) => ({ ...n }))
    const results = await Promise.all(
      state.map((node) =>
        Load.run({
          url: `${cp.url}/refresh`,
          method: "POST",
          concurrency: 1,
          seconds: SECONDS,
          headers: { "content-type": "application/x-protobuf" },
          headersFor: () => ({ authorization: `Bearer ${Biscuit.toText(node.credential)}` }),
          body: () => {
            const now = BigInt(Date.now())
            turn++
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
    const errors = results.reduce((n, r) => n + r.errors, 0)
    if (errors > 0)
      throw new Error(
        `refresh on ${driver}: ${errors} failed requests: ${results.find((r) => r.firstError)?.firstError}`,
      )
    const rps = results.reduce((n, r) => n + r.rps, 0)
    const all = results.flatMap((r) => [r.p50Ms, r.p99Ms])
    const p50 = results.map((r) => r.p50Ms).sort((a, b) => a - b)[Math.floor(results.length / 2)] ?? Number.NaN
    const p99 = Math.max(...results.map((r) => r.p99Ms))
    void all
    void turn
    return {
      name: `POST /refresh (${driver})`,
      figure: rps,
      unit: "req/s",
      baselineName: "crypto ceiling, 1 core",
      baseline: ceiling,
      ratio: rps / ceiling,
      goal: `>= ${goal * 100}%`,
      met: rps / ceiling >= goal,
      notes: `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms; ${CONCURRENCY} nodes refreshing in a loop`,
    }
  } finally {
    await cp.close()
  }
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const ceiling = cryptoCeiling()
  const entries: Array<Entry> = [await measure("sqlite", ceiling, 0.7)]
  if (await pgAvailable()) entries.push(await measure("postgres", ceiling, 0.5))
  else process.stdout.write("postgres not reachable: skipping the postgres refresh entry\n")
  return entries
}

void Context

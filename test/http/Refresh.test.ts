import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Challenge from "../../src/domain/Challenge.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { KeysResponseSchema, TokenRefreshRequestSchema } from "../../src/gen/mesh_pb.js"
import {
  AuthorizerBuilder,
  PublicKey,
  Biscuit as RawBiscuit,
  Rule,
  SignatureAlgorithm,
} from "../../src/platform/biscuit-wasm.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { describeDatabases } from "../support/databases.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("POST /refresh", (db) => {
  it.scoped("issues a new credential, marked no-store, that replaces the old one", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, biscuitTtl: Duration.hours(2) })
      const node = yield* enrollDirectly(cp, { labels: { zone: "eu" } })
      yield* TestClock.adjust(Duration.minutes(30))

      const answer = yield* MeshClient.refresh(cp.url, node.peer, node.credential)
      expect(answer.headers.get("cache-control")).toBe("no-store")
      expect(answer.headers.get("content-type")).toBe("application/x-protobuf")
      const fresh = yield* MeshClient.decodeRefresh(answer)
      expect(Number(fresh.expireTime?.seconds) * 1000).toBe(T0 + Duration.toMillis("2.5 hours"))

      // Refreshing again with the old credential is a replay: refused, and the new credential keeps working.
      const replay = yield* MeshClient.refresh(cp.url, node.peer, node.credential)
      expect(replay.status).toBe(401)
      expect(MeshClient.errorOf(replay)).toEqual({
        error: "unauthorized",
        message: "credential was already refreshed; enroll again",
      })
      expect((yield* MeshClient.refresh(cp.url, node.peer, fresh.biscuitToken)).status).toBe(200)
    }),
  )

  it.scoped("without proof of possession, a stolen credential learns nothing of the node's state", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const banned = yield* enrollDirectly(cp, { banned: true })
      const ended = yield* enrollDirectly(cp, { sessionExpiresAt: T0 - 1 })
      const thief = PeerKey.generate()
      for (const node of [banned, ended]) {
        const stolen = yield* MeshClient.postProto(
          `${cp.url}/refresh`,
          TokenRefreshRequestSchema,
          {
            challengeUnixMs: BigInt(T0),
            challengeSignature: Challenge.sign(thief.seed, "refresh", node.peer.peerId, T0),
            peerId: node.peer.peerId,
          },
          { authorization: `Bearer ${Biscuit.toText(node.credential)}` },
        )
        expect([stolen.status, MeshClient.errorOf(stolen).message]).toEqual([
          401,
          "challenge signature verification failed",
        ])
      }
      // With the proof, the node itself is told why.
      const own = yield* MeshClient.refresh(cp.url, banned.peer, banned.credential)
      expect([own.status, MeshClient.errorOf(own).message]).toEqual([403, "node is banned"])
    }),
  )

  it.scoped("concurrent refreshes with one credential yield exactly one new credential", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const node = yield* enrollDirectly(cp)
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, () => MeshClient.refresh(cp.url, node.peer, node.credential)),
        { concurrency: "unbounded" },
      )
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401, 401, 401, 401])
    }),
  )

  it.scoped("an independent biscuit verifier accepts the credential with the key from /keys and reads its facts", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const node = yield* enrollDirectly(cp, { role: "mesh:role:node", labels: { zone: "eu" } })
      const fresh = yield* MeshClient.decodeRefresh(yield* MeshClient.refresh(cp.url, node.peer, node.credential))

      const keys = fromBinary(KeysResponseSchema, (yield* MeshClient.request(`${cp.url}/keys`)).body)
      const token = RawBiscuit.fromBytesWithProvider(fresh.biscuitToken, (id: number) => {
        const index = keys.keyIds.indexOf(id)
        return PublicKey.fromBytes(keys.publicKeys[index] ?? new Uint8Array(32), SignatureAlgorithm.Ed25519)
      })
      const builder = new AuthorizerBuilder()
      builder.addCode(
        `time(${new Date(T0).toISOString()}); check if time($t), expiration($e), $t <= $e; allow if true;`,
      )
      const authorizer = builder.buildAuthenticated(token)
      // The time limit counts the compilation of the engine's code on its first run in a process (the module is
      // compiled lazily: src/platform/biscuit-wasm.ts), tens to hundreds of milliseconds: generous here, since what
      // is tested is the answer, not the verifier's speed.
      const limits = { max_facts: 1000, max_iterations: 100, max_time_micro: 30_000_000 }
      expect(authorizer.authorizeWithLimits(limits)).toBe(0)
      const read = (rule: string) =>
        authorizer.queryWithLimits(Rule.fromString(rule), limits).map((f: { toString(): string }) => f.toString())
      expect(read("data($p) <- node($p)")).toEqual([`data("${node.peer.peerId}")`])
      expect(read("data($r) <- role($r)")).toEqual([`data("mesh:role:node")`])
      expect(read("data($k, $v) <- label($k, $v)")).toEqual([`data("zone", "eu")`])
    }),
  )

  it.scoped("refuses a banned node with 403 and an expired session with 401", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const banned = yield* enrollDirectly(cp, { banned: true })
      const expiring = yield* enrollDirectly(cp, { sessionExpiresAt: T0 + 60_000 })
      const b = yield* MeshClient.refresh(cp.url, banned.peer, banned.credential)
      expect([b.status, MeshClient.errorOf(b)]).toEqual([403, { error: "forbidden", message: "node is banned" }])
      yield* TestClock.adjust(Duration.minutes(2))
      const e = yield* MeshClient.refresh(cp.url, expiring.peer, expiring.credential)
      expect([e.status, MeshClient.errorOf(e).message]).toEqual([401, "session expired; enroll again interactively"])
    }),
  )

  it.scoped("answers bad input with a 4xx and the error body, never a 500", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const node = yield* enrollDirectly(cp)
      const bearer = { authorization: `Bearer ${Biscuit.toText(node.credential)}` }
      const signed = (overrides: { seed?: Uint8Array; atMs?: number; peerId?: string } = {}) => {
        const at = BigInt(overrides.atMs ?? T0)
        return toBinary(
          TokenRefreshRequestSchema,
          create(TokenRefreshRequestSchema, {
            peerId: overrides.peerId ?? node.peer.peerId,
            challengeUnixMs: at,
            challengeSignature: Challenge.sign(overrides.seed ?? node.peer.seed, "refresh", node.peer.peerId, at),
          }),
        )
      }
      const post = (body: Uint8Array | string, headers: Record<string, string>) =>
        MeshClient.request(`${cp.url}/refresh`, {
          method: "POST",
          headers,
          body: typeof body === "string" ? body : Buffer.from(body),
        })
      const proto = { "content-type": "application/x-protobuf" }
      const cases: ReadonlyArray<readonly [string, Effect.Effect<MeshClient.Answer>, number]> = [
        ["garbage protobuf", post(new Uint8Array([0xff, 0xff, 0xff, 0x01]), { ...proto, ...bearer }), 400],
        ["JSON instead of protobuf", post('{"peer_id":"x"}', { "content-type": "application/json", ...bearer }), 400],
        ["no credential", post(signed(), proto), 401],
        [
          "truncated base64 credential",
          post(signed(), { ...proto, authorization: `Bearer ${Biscuit.toText(node.credential).slice(0, 41)}` }),
          401,
        ],
        [
          "credential bytes cut short",
          post(signed(), {
            ...proto,
            authorization: `Bearer ${Buffer.from(node.credential.subarray(0, 60)).toString("base64")}`,
          }),
          401,
        ],
        ["signature by another key", post(signed({ seed: PeerKey.generate().seed }), { ...proto, ...bearer }), 401],
        ["timestamp 6 minutes old", post(signed({ atMs: T0 - 6 * 60_000 }), { ...proto, ...bearer }), 401],
        ["timestamp 6 minutes ahead", post(signed({ atMs: T0 + 6 * 60_000 }), { ...proto, ...bearer }), 401],
        ["peer id of someone else", post(signed({ peerId: PeerKey.generate().peerId }), { ...proto, ...bearer }), 401],
      ]
      for (const [name, call, status] of cases) {
        const answer = yield* call
        expect(answer.status, name).toBe(status)
        const body = MeshClient.errorOf(answer)
        expect(typeof body.error, name).toBe("string")
        expect(body.message.length, name).toBeGreaterThan(0)
      }
      // None of those spent the credential.
      expect((yield* MeshClient.refresh(cp.url, node.peer, node.credential)).status).toBe(200)
    }),
  )
})

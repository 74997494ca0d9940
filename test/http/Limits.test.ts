import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import * as Raw from "../support/rawHttp.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("request limits", (db) => {
  it.scoped("enrollment routes are rate limited per client with 429 and Retry-After", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({
        database: yield* db.fresh,
        autoApproveEnrollment: true,
        enrollRateLimit: { perSecond: 2, burst: 3 },
      })
      const token = yield* mintToken(cp, { max_usages: 100 })
      const burst = yield* Effect.forEach(Array.from({ length: 5 }), () =>
        MeshClient.enroll(cp.url, PeerKey.generate(), token.token),
      )
      expect(burst.map((a) => a.status)).toEqual([200, 200, 200, 429, 429])
      const limited = burst[3] as MeshClient.Answer
      expect(MeshClient.errorOf(limited)).toEqual({
        error: "rate_limited",
        message: "too many enrollment requests; retry later",
      })
      expect(limited.headers.get("retry-after")).toBe("1")
      // Other routes are not limited...
      expect((yield* MeshClient.request(`${cp.url}/info`)).status).toBe(200)
      // ...and the budget refills with time: two per second.
      yield* TestClock.adjust(Duration.seconds(1))
      const after = yield* Effect.forEach(Array.from({ length: 3 }), () =>
        MeshClient.enroll(cp.url, PeerKey.generate(), token.token),
      )
      expect(after.map((a) => a.status)).toEqual([200, 200, 429])
    }),
  )

  it.scoped("bodies over the limit are refused with 413 before they are read", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, maxBodyBytes: 1024 })
      const big = yield* MeshClient.request(`${cp.url}/enroll`, {
        method: "POST",
        headers: { "content-type": "application/x-protobuf" },
        body: Buffer.alloc(4096),
      })
      expect([big.status, MeshClient.errorOf(big)]).toEqual([
        413,
        { error: "payload_too_large", message: "request body too large" },
      ])
      // Without a length header (chunked) the limit still holds while reading: the request fails and nothing is kept.
      const chunked = yield* Effect.promise(() =>
        fetch(`${cp.url}/admin/bootstrap-tokens`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${cp.adminToken}` },
          body: new ReadableStream({
            start(controller) {
              controller.enqueue(
                new TextEncoder().encode(`{"role":"mesh:role:node","description":"${"x".repeat(4096)}"}`),
              )
              controller.close()
            },
          }),
          duplex: "half",
        } as RequestInit).then(
          (r) => r.status,
          () => "connection closed",
        ),
      )
      expect([413, "connection closed"]).toContain(chunked)
      const tokens = yield* MeshClient.json(cp.url, "GET", "/admin/bootstrap-tokens", cp.adminToken)
      expect([tokens.status, tokens.json]).toEqual([200, []])
    }),
  )

  it.scoped("a request whose body or headers never arrive is answered 408 and closed within --request-timeout", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, requestTimeout: Duration.seconds(1) })
      // node:http measures this timeout on its own clock, not the test's: the wait below is real time, and far
      // longer than the timeout, so only a server that never answers fails it.
      const held = (head: string, body: string) =>
        Effect.promise(async () => {
          const socket = await Raw.open(cp.url)
          const answer = Raw.answerOf(socket, 20_000)
          socket.write(head)
          socket.write(body)
          return answer
        })
      const [bodyMissing, headersMissing] = yield* Effect.all(
        [
          held(
            Raw.head({
              method: "POST",
              target: "/admin/bootstrap-tokens",
              headers: {
                authorization: `Bearer ${cp.adminToken}`,
                "content-type": "application/json",
                "content-length": "100",
                connection: "keep-alive",
              },
            }),
            '{"role":',
          ),
          held("POST /enroll HTTP/1.1\r\nhost: localhost\r\n", ""),
        ],
        { concurrency: "unbounded" },
      )
      for (const outcome of [bodyMissing, headersMissing]) {
        const answer = Raw.expectAnswer(outcome)
        expect([answer.status, JSON.parse(answer.body), answer.headers.connection]).toEqual([
          408,
          { error: "request_timeout", message: "request not received in time" },
          "close",
        ])
      }
      // Nothing was minted from the half body, and the server serves on.
      const tokens = yield* MeshClient.json(cp.url, "GET", "/admin/bootstrap-tokens", cp.adminToken)
      expect([tokens.status, tokens.json]).toEqual([200, []])
    }),
  )

  it.scoped("a multipart request without a body is answered at once, on any spelling of the route (fuzz finding)", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const multipart = (target: string) =>
        Effect.promise(() =>
          Raw.send(
            cp.url,
            {
              method: "POST",
              target,
              headers: {
                authorization: `Bearer ${cp.adminToken}`,
                "content-type": "multipart/form-data; boundary=x",
              },
            },
            5_000,
          ),
        ).pipe(Effect.map((outcome) => Raw.expectAnswer(outcome).status))
      expect(yield* multipart("/admin/bootstrap-tokens")).toBe(415)
      expect(yield* multipart("/admin/bootstrap-tokens/")).toBe(404)
    }),
  )
})

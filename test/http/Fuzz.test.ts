import { expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import fc from "fast-check"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const PATHS = [
  "/healthz",
  "/readyz",
  "/metrics",
  "/info",
  "/keys",
  "/register",
  "/enroll",
  "/enroll/status",
  "/refresh",
  "/routers/lease",
  "/nodes/catalog",
  "/policies",
  "/admin/status",
  "/admin/audit",
  "/admin/bootstrap-tokens",
  "/admin/bootstrap-tokens/{x}",
  "/admin/enrollments",
  "/admin/enrollments/{x}/approve",
  "/admin/enrollments/{x}/reject",
  "/admin/revoke",
  "/admin/nodes/{x}/unban",
  "/admin/nodes/{x}/autonomous-recovery",
  "/user/status",
  "/user/bootstrap-tokens",
  "/user/revoke",
]

const segment = fc.oneof(
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom("..", "%00", "12D3KooWBogus", "bt_0000", "%2e%2e", "a%2Fb"),
)

const path = fc.oneof(
  fc.tuple(fc.constantFrom(...PATHS), segment).map(([p, s]) => p.replace("{x}", s)),
  fc.array(segment, { maxLength: 4 }).map((parts) => `/${parts.join("/")}`),
)

const query = fc.oneof(
  fc.constant(""),
  fc
    .dictionary(fc.constantFrom("peer_id", "status", "limit", "before", "x"), fc.string({ maxLength: 16 }))
    .map((q) => `?${new URLSearchParams(q).toString()}`),
)

const body = fc.oneof(
  fc.constant(undefined),
  fc.uint8Array({ maxLength: 256 }),
  fc.json().map((j) => new TextEncoder().encode(j)),
  fc.string({ maxLength: 64 }).map((s) => new TextEncoder().encode(s)),
)

const headers = fc.record(
  {
    "content-type": fc.constantFrom(
      "application/json",
      "application/x-protobuf",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "",
    ),
    authorization: fc.oneof(
      fc.constant("Bearer harness-admin-token"),
      fc.string({ maxLength: 40 }).map((s) => `Bearer ${s}`),
      fc.string({ maxLength: 20 }),
    ),
    accept: fc.constantFrom("application/json", "*/*", "text/event-stream"),
    "x-mesh-challenge-ts": fc.oneof(fc.integer().map(String), fc.string({ maxLength: 10 })),
    "x-mesh-challenge-sig": fc.base64String({ maxLength: 90 }),
  },
  { requiredKeys: [] },
)

const request = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"),
  path,
  query,
  body,
  headers,
})

describeDatabases("every route under random input", (db) => {
  it.scoped("answers 2xx, 3xx or 4xx, never 5xx, and stays up", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const failures: Array<string> = []
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(request, async (r) => {
            const hasBody = r.body !== undefined && r.method !== "GET" && r.method !== "HEAD"
            // A hung request fails the property instead of the whole test timing out.
            const response = await fetch(`${cp.url}${r.path}${r.query}`, {
              signal: AbortSignal.timeout(5000),
              method: r.method,
              headers: Object.fromEntries(Object.entries(r.headers).filter(([, v]) => v !== "")),
              ...(hasBody && r.body !== undefined ? { body: Buffer.from(r.body) } : {}),
            })
            await response.arrayBuffer()
            if (response.status >= 500) failures.push(`${r.method} ${r.path}${r.query} -> ${response.status}`)
            return response.status < 500
          }),
          { numRuns: Number(process.env.FUZZ_RUNS ?? 400) },
        ),
      ).pipe(Effect.catchAllDefect((defect) => Effect.sync(() => failures.push(String(defect)))))
      expect(failures).toEqual([])
      const health = yield* Effect.promise(() => fetch(`${cp.url}/healthz`))
      expect(health.status).toBe(200)
    }),
  )
})

import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import { describeDatabases } from "../support/databases.js"

describeDatabases("public routes", (db) => {
  it.scoped("healthz and readyz answer while the database is up", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ database: yield* db.fresh })
      expect(yield* cp.api.public.healthz()).toEqual({ status: "ok" })
      expect(yield* cp.api.public.readyz()).toEqual({
        status: "ready",
        // No token has named the issuer yet: its keys are read on first use.
        issuer_keys: [{ issuer: Harness.DEFAULT_ISSUER, keys: "unread", read_at: null, problem: null }],
      })
    }),
  )

  it.scoped("metrics are Prometheus text with runtime and per-route figures", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ database: yield* db.fresh })
      yield* Effect.promise(() => fetch(`${cp.url}/no-such-route`))
      const response = yield* Effect.promise(() => fetch(`${cp.url}/metrics`))
      expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4")
      const text = yield* Effect.promise(() => response.text())
      expect(text).toContain("# TYPE process_resident_memory_bytes gauge")
      expect(text).toMatch(/^process_resident_memory_bytes \d+/m)
      expect(text).toContain("# TYPE mesh_control_plane_http_requests_total counter")
      expect(text).toContain('mesh_control_plane_http_requests_total{code="404",route="unmatched"} 1')
      expect(text).toMatch(/mesh_control_plane_http_request_duration_seconds_count\{route="unmatched"\} 1/)
    }),
  )

  it.scoped("/info and /keys, answered from memory, carry the API's headers and bytes and are counted per route", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ database: yield* db.fresh })
      for (const route of ["/info", "/keys"]) {
        // The first answer may be computed (a database read) by the API route; the next ones are served from memory.
        yield* Effect.promise(() => fetch(`${cp.url}${route}`).then((r) => r.arrayBuffer()))
        const plain = yield* Effect.promise(() => fetch(`${cp.url}${route}`))
        // A query goes through the API's own route: the same answer.
        const viaApi = yield* Effect.promise(() => fetch(`${cp.url}${route}?via=api`))
        expect(plain.status).toBe(200)
        expect([...plain.headers.keys()]).toEqual([...viaApi.headers.keys()])
        expect(plain.headers.get("content-type")).toBe("application/x-protobuf")
        expect(viaApi.headers.get("content-type")).toBe("application/x-protobuf")
        const bytes = new Uint8Array(yield* Effect.promise(() => plain.arrayBuffer()))
        expect(plain.headers.get("content-length")).toBe(String(bytes.length))
        expect(bytes).toEqual(new Uint8Array(yield* Effect.promise(() => viaApi.arrayBuffer())))
      }
      const posted = yield* Effect.promise(() => fetch(`${cp.url}/info`, { method: "POST" }))
      expect(posted.status).toBe(404)
      const text = yield* Effect.promise(() => fetch(`${cp.url}/metrics`).then((r) => r.text()))
      expect(text).toContain('mesh_control_plane_http_requests_total{code="200",route="/info"} 3')
      expect(text).toContain('mesh_control_plane_http_requests_total{code="200",route="/keys"} 3')
      expect(text).toMatch(/mesh_control_plane_http_request_duration_seconds_count\{route="\/keys"\} 3/)
    }),
  )

  it.scoped("an unknown route answers the one error body", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const response = yield* Effect.promise(() => fetch(`${cp.url}/nope`, { method: "POST", body: "x" }))
      expect(response.status).toBe(404)
      expect(response.headers.get("content-type")).toContain("application/json")
      expect(yield* Effect.promise(() => response.json())).toEqual({ error: "not_found", message: "no such route" })
    }),
  )
})

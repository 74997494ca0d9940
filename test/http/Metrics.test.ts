import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Context, Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { BootstrapTokens } from "../../src/services/enrollment/BootstrapTokens.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { eventually } from "../support/eventually.js"
import { seriesValue } from "../support/metrics.js"
import { addressOf, enrollRouter } from "../support/routers.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const scrape = (url: string) =>
  Effect.map(MeshClient.request(`${url}/metrics`), (a) => new TextDecoder().decode(a.body))

/** A snapshot of the mesh state taken at least `seconds` after T0, not one begun while the test was setting up. */
const takenAfter = (seconds: number) => (text: string) =>
  (seriesValue(text, "mesh_control_plane_mesh_state_timestamp_seconds") ?? 0) >= T0 / 1000 + seconds

describeDatabases("control plane metrics", (db) => {
  it.scoped("the token-state gauge counts tokens whose owner is banned as disabled", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const tokens = Context.get(cp.context, BootstrapTokens)
      const mint = (ownerId: string, maxUsages: number) =>
        tokens.mint({
          role: "mesh:role:node",
          ttlHours: 24,
          maxUsages,
          description: "",
          autonomousRecovery: false,
          ownerId,
          actor: "test",
        })
      const { token } = yield* mint("https://issuer|mallory", 1)
      yield* mint("https://issuer|alice", 1)
      // Mallory's token is used up, and she is banned: the owner ban disables it.
      expect(yield* tokens.spend(token.id, T0)).toBe(true)
      const sql = Context.get(cp.context, SqlClient.SqlClient)
      yield* sql`INSERT INTO banned_identities (identity_key, banned_at) VALUES ('https://issuer|mallory', ${T0})`

      yield* TestClock.adjust(Duration.seconds(16))
      yield* scrape(cp.url)
      const text = yield* eventually(scrape(cp.url), takenAfter(16), { what: "fresh mesh state" })
      expect(seriesValue(text, 'mesh_control_plane_bootstrap_tokens{state="active"}')).toBe(1)
      expect(seriesValue(text, 'mesh_control_plane_bootstrap_tokens{state="disabled"}')).toBe(1)
      expect(seriesValue(text, 'mesh_control_plane_bootstrap_tokens{state="exhausted"}')).toBe(0)
    }),
  )

  it.scoped("expose mesh state, per-route requests and latencies, and the runtime, with the right values", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh, autoApproveEnrollment: true })
      const router = yield* enrollRouter(cp)
      const a = PeerKey.generate()
      const b = PeerKey.generate()
      yield* MeshClient.lease(cp.url, router.peer, router.credential, [addressOf(router.peer.peerId)], {
        connectedPeers: [a.peerId, b.peerId, router.peer.peerId],
      })
      const token = yield* mintToken(cp, { max_usages: 2 })
      yield* MeshClient.enroll(cp.url, a, token.token)
      yield* MeshClient.enroll(cp.url, b, token.token)
      yield* MeshClient.enroll(cp.url, PeerKey.generate(), token.token) // 410: used up
      yield* admin(cp, "POST", "/admin/revoke", { peer_id: b.peerId })

      // Gauges come from a snapshot at most 15 s old: let it age, scrape to start a refresh, then read.
      yield* TestClock.adjust(Duration.seconds(16))
      yield* scrape(cp.url)
      const text = yield* eventually(scrape(cp.url), takenAfter(16), { what: "fresh mesh state" })
      expect(seriesValue(text, "mesh_control_plane_routers_active")).toBe(1)
      const p = "mesh_control_plane_"
      expect(seriesValue(text, `${p}enrolled_nodes{role="mesh:role:node",state="admitted"}`)).toBe(1)
      expect(seriesValue(text, `${p}enrolled_nodes{role="mesh:role:node",state="banned"}`)).toBe(1)
      expect(seriesValue(text, `${p}enrolled_nodes{role="mesh:role:router",state="admitted"}`)).toBe(1)
      expect(seriesValue(text, `${p}mesh_connected_peers`)).toBe(2)
      expect(seriesValue(text, `${p}router_connected_peers{router="${router.peer.peerId}"}`)).toBe(3)
      expect(seriesValue(text, `${p}bootstrap_tokens{state="exhausted"}`)).toBe(2)
      expect(seriesValue(text, `${p}enrollment_requests{status="approved"}`)).toBe(3)
      expect(seriesValue(text, `${p}signing_keys`)).toBe(1)
      expect(seriesValue(text, `${p}mesh_state_scrape_success`)).toBe(1)
      expect(seriesValue(text, `${p}http_requests_total{code="200",route="/enroll"}`)).toBe(3)
      expect(seriesValue(text, `${p}http_requests_total{code="410",route="/enroll"}`)).toBe(1)
      expect(seriesValue(text, `${p}http_requests_total{code="200",route="/routers/lease"}`)).toBe(1)
      expect(seriesValue(text, `${p}http_request_duration_seconds_count{route="/enroll"}`)).toBe(4)
      expect(text).toContain(`${p}http_request_duration_seconds_bucket{route="/enroll",le="0.005"}`)
      expect(seriesValue(text, "process_resident_memory_bytes")).toBeGreaterThan(0)
      // Probes are not counted as traffic.
      expect(text).not.toContain('route="/metrics"')
    }),
  )
})

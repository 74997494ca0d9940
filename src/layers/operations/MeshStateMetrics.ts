/**
 * The mesh-state gauges of /metrics (nodes by role and state, routers, mesh-connected peers, tokens, requests,
 * users, signing keys), recomputed from the database at most every 15 seconds rather than on each scrape: a scrape
 * that finds the snapshot stale serves it and starts a refresh in the background, so scrapes cost nothing and a slow
 * database never slows them. The last good snapshot stays on failure. Nothing runs while nobody scrapes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Duration, Effect, Layer, Runtime } from "effect"
import * as Token from "../../domain/BootstrapToken.js"
import { KeyRing } from "../../services/identity/KeyRing.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { Leases } from "../../services/routers/Leases.js"

export const MAX_AGE = Duration.seconds(15)

const prefix = "mesh_control_plane_"

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const metrics = yield* Metrics
    const leases = yield* Leases
    const keyRing = yield* KeyRing
    const g = (name: string, help: string) => metrics.gauge(`${prefix}${name}`, help)
    const nodes = g("enrolled_nodes", "Enrolled nodes by role and state (admitted, expired, banned).")
    const routers = g("routers_active", "Routers holding a live lease.")
    const meshPeers = g("mesh_connected_peers", "Distinct peers the routers report as connected, routers excluded.")
    const routerPeers = g("router_connected_peers", "Peers connected to each router, as last reported.")
    const tokens = g("bootstrap_tokens", "Bootstrap tokens by state.")
    const requests = g("enrollment_requests", "Enrollment requests by status.")
    const users = g("users", "Users seen through OIDC.")
    const keys = g("signing_keys", "Live signing keys (current and in grace).")
    const success = g("mesh_state_scrape_success", "1 when the last refresh of these gauges succeeded.")
    const updated = g("mesh_state_timestamp_seconds", "When these gauges were last refreshed.")

    const refresh = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const nodeRows = yield* sql<{ role: string; state: string; n: number }>`SELECT role,
          CASE WHEN banned THEN 'banned'
               WHEN session_expires_at IS NOT NULL AND session_expires_at < ${now} THEN 'expired'
               ELSE 'admitted' END AS state,
          COUNT(*) AS n
        FROM nodes GROUP BY 1, 2`
      const tokenRows = yield* sql<{
        usages_count: number
        max_usages: number
        expires_at: number
        revoked_at: number | null
        owner_banned: number
      }>`
        SELECT t.usages_count, t.max_usages, t.expires_at, t.revoked_at,
          CASE WHEN EXISTS (SELECT 1 FROM banned_identities b WHERE b.identity_key = t.owner_id) THEN 1 ELSE 0 END
            AS owner_banned
        FROM bootstrap_tokens t`
      const requestRows = yield* sql<{
        status: string
        n: number
      }>`SELECT status, COUNT(*) AS n FROM enrollment_requests GROUP BY status`
      const [userCount] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM users`
      const live = yield* leases.live
      const snapshot = yield* keyRing.snapshot

      nodes.reset()
      for (const row of nodeRows) nodes.set({ role: row.role, state: row.state }, Number(row.n))
      routers.set({}, live.length)
      const routerIds = new Set(live.map((l) => l.peerId))
      meshPeers.set({}, new Set(live.flatMap((l) => l.connectedPeers).filter((p) => !routerIds.has(p))).size)
      routerPeers.reset()
      for (const lease of live) routerPeers.set({ router: lease.peerId }, lease.connectedPeers.length)
      const byState: Record<Token.State, number> = { active: 0, revoked: 0, expired: 0, exhausted: 0, disabled: 0 }
      for (const t of tokenRows) {
        const token = {
          revokedAt: t.revoked_at ?? undefined,
          expiresAt: Number(t.expires_at),
          usagesCount: Number(t.usages_count),
          maxUsages: Number(t.max_usages),
        }
        byState[Token.stateOf(token, now, Number(t.owner_banned) === 1)]++
      }
      for (const [state, n] of Object.entries(byState)) tokens.set({ state }, n)
      requests.reset()
      for (const status of ["pending", "approved", "rejected"]) {
        requests.set({ status }, Number(requestRows.find((r) => r.status === status)?.n ?? 0))
      }
      users.set({}, Number(userCount?.n ?? 0))
      keys.set({}, snapshot.live.length)
      success.set({}, 1)
      updated.set({}, Math.floor(now / 1000))
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logWarning("mesh state metrics refresh failed", cause),
          Effect.sync(() => success.set({}, 0)),
        ),
      ),
    )

    const runtime = yield* Effect.runtime<never>()
    const scope = yield* Effect.scope
    let refreshedAt = Number.NEGATIVE_INFINITY
    let running = false
    const start = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (running || now - refreshedAt < Duration.toMillis(MAX_AGE)) return
      running = true
      refreshedAt = now
      yield* refresh.pipe(Effect.ensuring(Effect.sync(() => (running = false))), Effect.forkIn(scope))
    })
    metrics.beforeScrape(() => Runtime.runSync(runtime)(start))
    yield* start
  }),
)

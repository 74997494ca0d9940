/** Fills a benchmark's database: nodes that will refresh under load, and bulk records that only add weight. */
import { randomBytes } from "node:crypto"
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect } from "effect"
import { BootstrapTokens } from "../../src/services/enrollment/BootstrapTokens.js"
import { OPERATOR } from "../../src/services/operations/Audit.js"
import * as DirectEnrollment from "../../src/testing/DirectEnrollment.js"
import type { RunningControlPlane } from "./controlPlane.js"

export interface SeededNode {
  readonly peer: DirectEnrollment.EnrolledNode["peer"]
  credential: Uint8Array
}

/** Enrolled nodes with a current credential each, made through the services as enrollment would. */
export const nodes = (cp: RunningControlPlane, count: number): Promise<Array<SeededNode>> =>
  cp.runtime.runPromise(
    Effect.map(
      Effect.forEach(Array.from({ length: count }), () => DirectEnrollment.enroll({ labels: { zone: "eu" } })),
      (all) => all.map((n) => ({ ...n })),
    ),
  )

/** A token with room for every enrollment a benchmark makes. */
export const token = (cp: RunningControlPlane, maxUsages: number): Promise<string> =>
  cp.runtime.runPromise(
    Effect.map(
      Effect.flatMap(BootstrapTokens, (tokens) =>
        tokens.mint({
          role: "mesh:role:node",
          ttlHours: 24,
          maxUsages,
          description: "benchmark",
          autonomousRecovery: false,
          ownerId: undefined,
          actor: OPERATOR,
        }),
      ),
      (minted) => minted.secret,
    ),
  )

/**
 * Bulk rows written straight into the tables, in batches: `nodeCount` node records (a few banned) and `tokenCount`
 * bootstrap tokens. They only make the database as big as a large mesh's.
 */
export const bulk = (cp: RunningControlPlane, nodeCount: number, tokenCount: number): Promise<void> =>
  cp.runtime.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const now = yield* Clock.currentTimeMillis
      const batch = 500
      for (let start = 0; start < nodeCount; start += batch) {
        const rows = Array.from({ length: Math.min(batch, nodeCount - start) }, (_, i) => {
          const n = start + i
          return {
            peer_id: `bulk-${n}-${randomBytes(4).toString("hex")}`,
            public_key: randomBytes(32),
            role: "mesh:role:node",
            labels_json: JSON.stringify({ zone: n % 2 === 0 ? "eu" : "us" }),
            enrollment_type: "bootstrap",
            credential_digest: randomBytes(32),
            credential_expires_at: now + 86_400_000,
            enrolled_at: now,
            banned: n % 1000 === 0 ? 1 : 0,
            banned_at: n % 1000 === 0 ? now : null,
          }
        })
        yield* sql`INSERT INTO nodes ${sql.insert(rows)}`
      }
      for (let start = 0; start < tokenCount; start += batch) {
        const rows = Array.from({ length: Math.min(batch, tokenCount - start) }, (_, i) => ({
          id: `bt_bulk${start + i}`,
          token_hash: randomBytes(32),
          role: "mesh:role:node",
          max_usages: 1,
          usages_count: 0,
          description: "bulk",
          created_at: now,
          expires_at: now + 86_400_000,
        }))
        yield* sql`INSERT INTO bootstrap_tokens ${sql.insert(rows)}`
      }
    }),
  )

/** The control plane's resident memory, from its own /metrics. */
export const residentMemory = async (url: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(/^process_resident_memory_bytes (\d+)/m.exec(text)?.[1] ?? Number.NaN)
}

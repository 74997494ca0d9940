/**
 * The real `mesh-control-plane` takes its secrets where an operator puts them, and uses them: the admin token from
 * `--admin-token-path` (over MESH_ADMIN_TOKEN), the DSN from `--db-dsn-path` (over `--db-dsn`) or from MESH_DB_DSN.
 * "Uses" means the admin API accepts the file's token and refuses the other, and the database the DSN names is the
 * one written while another the command line also names stays untouched.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { expect, it } from "@effect/vitest"
import { Effect, Redacted, type Scope } from "effect"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import * as SqlLive from "../../src/layers/sql/SqlLive.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as ControlPlaneProcess from "../scale/ControlPlaneProcess.js"
import { describeDatabases } from "../support/databases.js"

/** A 0600 file holding `content`, in a folder removed with the scope. */
const secretFile = (name: string, content: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-secret-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
    ),
    (dir) => {
      const file = join(dir, name)
      writeFileSync(file, content)
      chmodSync(file, 0o600)
      return file
    },
  )

/** Descriptions of the bootstrap tokens in a database; none when the control plane never created its tables there. */
const tokensIn = (database: DatabaseConfig) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ description: string }>`SELECT description FROM bootstrap_tokens`.pipe(
      Effect.orElseSucceed(() => []),
    )
    return rows.map((r) => r.description)
  }).pipe(Effect.provide(SqlLive.layer(database)), Effect.scoped, Effect.orDie)

const mint = (cp: ControlPlaneProcess.ControlPlaneProcess, token: string, description: string) =>
  MeshClient.json(cp.url, "POST", "/admin/bootstrap-tokens", token, { role: "mesh:role:node", description })

describeDatabases("mesh-control-plane secrets from files and the environment", (db) => {
  it.scopedLive("--admin-token-path: the admin API takes the file's token, not MESH_ADMIN_TOKEN's", () =>
    Effect.gen(function* () {
      const file = yield* secretFile("admin-token", "token-from-the-file\n")
      const cp = yield* ControlPlaneProcess.start({
        database: yield* db.freshShared,
        flags: ["--admin-token-path", file],
      })
      expect((yield* mint(cp, "token-from-the-file", "by file")).status).toBe(201)
      const fromEnv = yield* mint(cp, ControlPlaneProcess.ADMIN_TOKEN, "by env")
      expect([fromEnv.status, fromEnv.json]).toEqual([
        401,
        { error: "unauthorized", message: "an admin token is required as Authorization: Bearer" },
      ])
      // The file's content never reaches the logs.
      expect(yield* cp.output).not.toContain("token-from-the-file")
    }),
  )

  it.scopedLive("without --admin-token-path or MESH_ADMIN_TOKEN the admin API is disabled", () =>
    Effect.gen(function* () {
      const cp = yield* ControlPlaneProcess.start({ database: yield* db.freshShared, env: { MESH_ADMIN_TOKEN: "" } })
      for (const token of [ControlPlaneProcess.ADMIN_TOKEN, ""]) {
        const refused = yield* mint(cp, token, "refused")
        expect([refused.status, refused.json]).toEqual([
          401,
          { error: "unauthorized", message: "the admin API is disabled: no admin token is configured" },
        ])
      }
      expect(yield* cp.output).toContain("disabled (no admin token)")
    }),
  )

  it.scopedLive("--db-dsn-path: the database named in the file is written, not the one --db-dsn names", () =>
    Effect.gen(function* () {
      const named = yield* db.freshShared
      const decoy = yield* db.freshShared
      const file = yield* secretFile("dsn", `${Redacted.value(named.dsn)}\n`)
      const cp = yield* ControlPlaneProcess.start({ database: decoy, flags: ["--db-dsn-path", file] })
      expect((yield* mint(cp, cp.adminToken, "via dsn file")).status).toBe(201)
      expect(yield* tokensIn(named)).toEqual(["via dsn file"])
      expect(yield* tokensIn(decoy)).toEqual([])
      expect(yield* cp.output).not.toContain(Redacted.value(named.dsn))
    }),
  )

  it.scopedLive("MESH_DB_DSN: without --db-dsn the database named in the environment is written", () =>
    Effect.gen(function* () {
      const named = yield* db.freshShared
      const cp = yield* ControlPlaneProcess.start({
        database: named,
        dsnFlag: false,
        env: { MESH_DB_DSN: Redacted.value(named.dsn) },
      })
      expect((yield* mint(cp, cp.adminToken, "via env")).status).toBe(201)
      expect(yield* tokensIn(named)).toEqual(["via env"])
    }),
  )
})

import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { runBin } from "../support/processes.js"

const lines = (text: string) => text.split("\n").filter((l) => l.trim().length > 0)

describe("the admin database commands work on a control plane's database only", () => {
  it("refuse a sqlite path that does not exist, and do not create it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-admin-db-"))
    try {
      const path = join(dir, "typo.db")
      const result = await runBin("mesh-control-plane", ["admin", "ban", "--peer", "12D3KooWx", "--db-dsn", path])
      expect(result.status).toBe(2)
      expect(lines(result.stderr)).toEqual([
        `mesh-control-plane: --db-dsn: ${path} does not exist; give the control plane's database file (admin commands never create one)`,
      ])
      expect(existsSync(path)).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("refuse a sqlite file that is not a control plane's database, and leave it as it was", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-admin-db-"))
    try {
      const path = join(dir, "other.db")
      const other = new Sqlite(path)
      other.exec("CREATE TABLE notes (body TEXT)")
      other.close()
      const empty = join(dir, "empty.db")
      writeFileSync(empty, "")
      for (const file of [path, empty]) {
        const result = await runBin("mesh-control-plane", ["admin", "unban", "--peer", "12D3KooWx", "--db-dsn", file])
        expect(result.status, file).toBe(2)
        expect(lines(result.stderr)).toEqual([
          "mesh-control-plane: --db-dsn: the sqlite database given holds no control plane (no mesh_migrations table); give the one the control plane runs on",
        ])
      }
      const reopened = new Sqlite(path, { readonly: true })
      const tables = reopened.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()
      reopened.close()
      expect(tables).toEqual([{ name: "notes" }])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

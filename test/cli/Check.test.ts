/**
 * `--check` on each program: a good configuration prints what would run, without secrets, and exits 0 having started
 * nothing; a bad one exits 2 with the one-line reason.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { type Completed, runBin } from "../support/processes.js"

const lines = (text: string) => text.split("\n").filter((l) => l.trim().length > 0)

/** No MESH_ setting of the shell reaches the program. */
const clean = {
  MESH_ADMIN_TOKEN: "",
  MESH_CONTROL_PLANE: "",
  MESH_API_TOKEN: "",
  MESH_OIDC_ISSUER: "",
}

describe("--check", () => {
  it("validates each program's configuration: good ones print the settings and exit 0, bad ones exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-check-"))
    try {
      const adminToken = join(dir, "admin-token")
      writeFileSync(adminToken, "admin-secret-value\n", { mode: 0o600 })
      const routerToken = join(dir, "router-token")
      writeFileSync(routerToken, "router-secret-value\n", { mode: 0o600 })
      const nodeDir = join(dir, "node")
      mkdirSync(nodeDir, { mode: 0o700 })
      const good = join(dir, "good.yaml")
      writeFileSync(
        good,
        "labels:\n  zone: eu\nservices:\n  - name: llm\n    type: inference\n    target_url: http://127.0.0.1:8000\n",
      )
      const bad = join(dir, "bad.yaml")
      writeFileSync(bad, "services:\n  - name: x\n    type: grpc\n    target_url: http://127.0.0.1:8000\n")

      const run = (name: string, args: ReadonlyArray<string>): Promise<Completed> => runBin(name, args, clean)
      const [cpGood, cpBad, routerGood, routerBad, nodeGood, nodeBad] = await Promise.all([
        run("mesh-control-plane", [
          "--check",
          "--issuer",
          "https://id.example.com",
          "--db-driver",
          "postgres",
          "--db-dsn",
          "postgres://mesh:db-password@db.internal:5432/mesh",
          "--admin-token-path",
          adminToken,
        ]),
        run("mesh-control-plane", [
          "--check",
          "--issuer",
          "https://id.example.com",
          "--db-dsn",
          join(dir, "no", "cp.db"),
        ]),
        run("mesh-router", [
          "--check",
          "--control-plane",
          "https://cp.example.com",
          "--bootstrap-token-path",
          routerToken,
          "--metrics-addr",
          "127.0.0.1:9100",
        ]),
        run("mesh-router", ["--check", "--control-plane", "https://cp.example.com", "--metrics-addr", "nowhere"]),
        run("mesh-node", [
          "run",
          "--check",
          "--control-plane",
          "https://cp.example.com",
          "--data-dir",
          nodeDir,
          "--config",
          good,
          "--bind-addr",
          "127.0.0.1:0",
        ]),
        run("mesh-node", ["run", "--check", "--data-dir", nodeDir, "--config", bad]),
      ])

      expect(cpGood.status, cpGood.stderr).toBe(0)
      expect(lines(cpGood.stdout)[0]).toBe("mesh-control-plane: configuration OK")
      expect(cpGood.stdout).toMatch(/^\s+database\s+postgres postgres:\/\/mesh:\*\*\*@db\.internal:5432\/mesh$/m)
      expect(cpGood.stdout).toMatch(new RegExp(`^\\s+admin API\\s+enabled \\(token from ${adminToken}\\)$`, "m"))
      expect(cpGood.stdout).toMatch(/^\s+issuers\s+https:\/\/id\.example\.com$/m)
      expect(`${cpGood.stdout}${cpGood.stderr}`).not.toMatch(/db-password|admin-secret-value/)
      expect(cpBad.status).toBe(2)
      expect(lines(cpBad.stderr)).toEqual([
        `mesh-control-plane: --db-dsn: the folder of ${join(dir, "no", "cp.db")} does not exist`,
      ])
      expect(cpBad.stdout).toBe("")

      expect(routerGood.status, routerGood.stderr).toBe(0)
      expect(lines(routerGood.stdout)[0]).toBe("mesh-router: configuration OK")
      expect(routerGood.stdout).toMatch(new RegExp(`^\\s+bootstrap token\\s+given \\(${routerToken}\\)$`, "m"))
      expect(routerGood.stdout).toMatch(/^\s+metrics\s+127\.0\.0\.1:9100$/m)
      expect(`${routerGood.stdout}${routerGood.stderr}`).not.toContain("router-secret-value")
      expect(routerBad.status).toBe(2)
      expect(lines(routerBad.stderr)).toEqual(['mesh-router: --metrics-addr: "nowhere" is not host:port'])

      expect(nodeGood.status, nodeGood.stderr).toBe(0)
      expect(lines(nodeGood.stdout)[0]).toBe("mesh-node: configuration OK")
      expect(nodeGood.stdout).toMatch(/^\s+services\s+inference:\/\/llm$/m)
      expect(nodeGood.stdout).toMatch(/^\s+labels\s+zone=eu$/m)
      expect(nodeGood.stdout).toMatch(/^\s+local API\s+127\.0\.0\.1:0$/m)
      expect(nodeGood.stdout).not.toMatch(/mesh-api-[0-9a-f]{16}/)
      expect(nodeBad.status).toBe(2)
      expect(lines(nodeBad.stderr)).toHaveLength(1)
      expect(nodeBad.stderr).toContain(bad)
      expect(nodeBad.stderr).toContain("services[0].type: must be one of mcp, inference, a2a")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 300_000)
})

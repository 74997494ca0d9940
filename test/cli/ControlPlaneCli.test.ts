import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { runBin } from "../support/processes.js"

const lines = (text: string) => text.split("\n").filter((l) => l.trim().length > 0)

describe("mesh-control-plane command line", () => {
  it("refuses an unknown driver with a one-line reason and a non-zero exit", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--db-driver", "mysql"])
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toEqual(['--db-driver: "mysql" is not one of sqlite, postgres'])
  })

  it("refuses a duration that is not Go syntax", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--lease-duration", "banana"])
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toEqual([
      '--lease-duration: invalid duration "banana" (use Go syntax such as 30s, 15m, 1h30m, 0)',
    ])
  })

  it("refuses a bad duration from the environment too", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer"], { MESH_KEY_GRACE_PERIOD: "soon" })
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toHaveLength(1)
    expect(result.stderr).toContain("--key-grace-period")
  })

  it("refuses an empty secret file instead of running without the secret", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-cli-"))
    try {
      const file = join(dir, "admin-token")
      writeFileSync(file, "\n", { mode: 0o600 })
      const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--admin-token-path", file])
      expect(result.status).toBe(2)
      expect(lines(result.stderr)).toEqual([`mesh-control-plane: ${file} is empty: it must hold the secret`])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("refuses an unknown flag", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--bogus"])
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toHaveLength(1)
  })

  it("requires an issuer", async () => {
    const result = await runBin("mesh-control-plane", [], { MESH_OIDC_ISSUER: "" })
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toEqual(["mesh-control-plane: --issuer is required (or MESH_OIDC_ISSUER)"])
  })

  it("documents every flag of the spec in --help, with defaults and environment variables", async () => {
    const result = await runBin("mesh-control-plane", ["--help"])
    expect(result.status).toBe(0)
    for (const flag of [
      "--issuer",
      "--allowed-audiences",
      "--oidc-client-id",
      "--insecure-skip-tls-verify",
      "--oidc-keys-max-age",
      "--bind-address",
      "--db-driver",
      "--db-dsn",
      "--db-dsn-path",
      "--admin-token-path",
      "--auto-approve-enrollment",
      "--biscuit-ttl",
      "--oidc-session-ttl",
      "--key-rotation-interval",
      "--key-grace-period",
      "--member-sync-interval",
      "--lease-duration",
      "--node-retention",
      "--mesh-reconnect-interval",
      "--request-timeout",
      "--log-level",
    ]) {
      expect(result.stdout, flag).toContain(flag)
    }
    expect(result.stdout).toContain("Default: 2160h.")
    expect(result.stdout).toContain("Env: MESH_OIDC_ISSUER.")
    expect(result.stdout).toContain("Env: MESH_REQUEST_TIMEOUT.")
    expect(result.stdout).toContain("Env: MESH_OIDC_KEYS_MAX_AGE.")
  })

  it("refuses an issuer key max age under a second: the issuer would be read for every token", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--oidc-keys-max-age", "500ms"])
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toEqual(["mesh-control-plane: --oidc-keys-max-age: must be at least 1s"])
  })

  it("refuses a request timeout of zero: a request must never be waited for forever", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--request-timeout", "0"])
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toEqual(["mesh-control-plane: --request-timeout: must be more than 0"])
  })

  it("refuses a grace period too short for members to move to a new key, in one line", async () => {
    const result = await runBin("mesh-control-plane", ["--issuer", "http://issuer", "--key-grace-period", "20m"])
    expect(result.status).toBe(2)
    expect(lines(result.stderr)).toHaveLength(1)
    expect(result.stderr).toContain(
      "--key-grace-period 20m is shorter than 3 × --member-sync-interval (15m): a member that misses the key_rotation event",
    )
    // Members that sync every 5 s make 20 s enough; the check is then passed and the next refusal is another one.
    const fast = await runBin("mesh-control-plane", [
      "--issuer",
      "http://issuer",
      "--key-grace-period",
      "20s",
      "--member-sync-interval",
      "5s",
      "--request-timeout",
      "0",
    ])
    expect(lines(fast.stderr)).toEqual(["mesh-control-plane: --request-timeout: must be more than 0"])
  })
})

import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fromBinary } from "@bufbuild/protobuf"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { ControlPlaneInfoResponseSchema } from "../../src/gen/mesh_pb.js"
import { freePort } from "../../src/testing/Ports.js"
import { nodeArgs, runBin } from "../support/processes.js"

const dir = mkdtempSync(join(tmpdir(), "mesh-router-test-"))
const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const start = (name: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) => {
  const child = spawn(process.execPath, nodeArgs(name, args), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  })
  children.push(child)
  return child
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const poll = async <A>(what: string, attempt: () => Promise<A | undefined>): Promise<A> => {
  // 30 s: a child process on a loaded machine takes seconds to start.
  for (let i = 0; i < 300; i++) {
    const value = await attempt().catch(() => undefined)
    if (value !== undefined) return value
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe("mesh-router command line", () => {
  it("requires a control plane URL, with a one-line reason", async () => {
    const result = await runBin("mesh-router", [], { MESH_CONTROL_PLANE: "" })
    expect(result.status).toBe(2)
    expect(result.stderr.trim()).toBe("mesh-router: --control-plane is required (or MESH_CONTROL_PLANE)")
  })

  it("enrolls with a bootstrap token file, leases, serves metrics, and keeps its identity across restarts", {
    timeout: 120_000,
  }, async () => {
    const cpPort = await freePort()
    const cpUrl = `http://127.0.0.1:${cpPort}`
    start(
      "mesh-control-plane",
      [
        "--issuer",
        "http://127.0.0.1:1",
        "--bind-address",
        `127.0.0.1:${cpPort}`,
        "--db-dsn",
        join(dir, "cp.db"),
        "--auto-approve-enrollment",
        "--log-level",
        "warn",
      ],
      { MESH_ADMIN_TOKEN: "test-admin" },
    )
    await poll("control plane", async () => ((await fetch(`${cpUrl}/readyz`)).ok ? true : undefined))
    const minted = (await (
      await fetch(`${cpUrl}/admin/bootstrap-tokens`, {
        method: "POST",
        headers: { authorization: "Bearer test-admin", "content-type": "application/json" },
        body: JSON.stringify({ role: "mesh:role:router" }),
      })
    ).json()) as { token: string }
    const tokenFile = join(dir, "router-token")
    writeFileSync(tokenFile, `${minted.token}\n`, { mode: 0o600 })

    const metricsPort = await freePort()
    const routerDir = join(dir, "router")
    const args = [
      "--control-plane",
      cpUrl,
      "--listen",
      "/ip4/127.0.0.1/tcp/0",
      "--data-dir",
      routerDir,
      "--bootstrap-token-path",
      tokenFile,
      "--metrics-addr",
      `127.0.0.1:${metricsPort}`,
      "--log-level",
      "warn",
    ]
    const router = start("mesh-router", args)
    const listed = await poll("router on /info", async () => {
      const info = fromBinary(
        ControlPlaneInfoResponseSchema,
        new Uint8Array(await (await fetch(`${cpUrl}/info`)).arrayBuffer()),
      )
      return info.routerAddresses.length > 0 ? info.routerAddresses : undefined
    })
    const peerId = /\/p2p\/(\w+)$/.exec(listed[0] ?? "")?.[1]
    expect(peerId).toMatch(/^12D3KooW/)
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).json()).toEqual({ status: "ready" })
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    expect(metrics).toContain('mesh_router_lease_renewals_total{outcome="ok"}')
    expect(metrics).toMatch(/^mesh_router_credential_expiry_timestamp_seconds \d+/m)
    for (const file of ["identity.json", "credential.json", "trusted-keys.json"]) {
      expect(statSync(join(routerDir, file)).mode & 0o777, file).toBe(0o600)
    }
    expect(readFileSync(join(routerDir, "credential.json"), "utf8")).not.toContain(minted.token)

    // Restarted without a token (it was single-use): same key, stored credential, same peer id.
    const identityBefore = readFileSync(join(routerDir, "identity.json"), "utf8")
    expect((JSON.parse(identityBefore) as { seed: string }).seed).toMatch(/^[0-9a-f]{64}$/)
    await stop(router)
    start(
      "mesh-router",
      args.filter((a, i) => a !== "--bootstrap-token-path" && args[i - 1] !== "--bootstrap-token-path"),
    )
    // The restarted process's own counter: a lease it made with the stored credential, whose proof of possession
    // only the enrolled key can sign (the previous process's lease would still be on /info for a while).
    await poll("restarted router leasing", async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
      const renewed = /^mesh_router_lease_renewals_total\{outcome="ok"\} (\d+)/m.exec(text)
      return Number(renewed?.[1] ?? 0) >= 1 ? true : undefined
    })
    expect(readFileSync(join(routerDir, "identity.json"), "utf8")).toBe(identityBefore)
    const info = fromBinary(
      ControlPlaneInfoResponseSchema,
      new Uint8Array(await (await fetch(`${cpUrl}/info`)).arrayBuffer()),
    )
    expect(info.routerAddresses.length).toBeGreaterThan(0)
    expect(info.routerAddresses.every((a) => a.endsWith(`/p2p/${peerId}`))).toBe(true)
  })
})

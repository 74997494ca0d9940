import type { ChildProcess } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { freePort } from "../../src/testing/Ports.js"
import { healthcheck, poll, runEntrypoint, shimBinDir, startEntrypoint, stop, stubBinDir } from "./support.js"

const dir = mkdtempSync(join(tmpdir(), "mesh-entrypoint-"))
const children: Array<ChildProcess> = []
afterAll(async () => {
  await Promise.all(children.map(stop))
  rmSync(dir, { recursive: true, force: true })
})

const stubs = stubBinDir(join(dir, "stubs"))
const healthFile = join(dir, "health")

/** Runs the entry point against the stub programs; returns what the stub saw and the health target written. */
const call = async (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) => {
  const result = await runEntrypoint(args, {
    cwd: dir,
    env: { MESH_BIN_DIR: stubs, MESH_HEALTH_FILE: healthFile, ...env },
  })
  const health = existsSync(healthFile) ? readFileSync(healthFile, "utf8").trim() : undefined
  const seen =
    result.status === 0 && result.stdout.startsWith("{")
      ? (JSON.parse(result.stdout) as { program: string; argv: Array<string>; metricsAddr: string | null })
      : undefined
  return { ...result, health, seen }
}

describe("container entry point", () => {
  it.each([
    ["control-plane", "mesh-control-plane"],
    ["router", "mesh-router"],
    ["node", "mesh-node"],
    ["one", "mesh-one"],
  ])("runs %s as %s with its arguments unchanged", async (role, program) => {
    const args = ["--flag=value", "two words", "", "--last"]
    const result = await call([role, ...args])
    expect(result.status).toBe(0)
    expect(result.seen?.program).toBe(program)
    expect(result.seen?.argv).toEqual(args)
  })

  it("passes node subcommands and admin commands through", async () => {
    expect((await call(["node", "run", "--data-dir", "x"])).seen?.argv).toEqual(["run", "--data-dir", "x"])
    expect((await call(["node", "join", "--role", "mesh:role:node"])).seen?.argv).toEqual([
      "join",
      "--role",
      "mesh:role:node",
    ])
    expect((await call(["control-plane", "admin", "ban", "--peer", "12D3KooW"])).seen?.argv).toEqual([
      "admin",
      "ban",
      "--peer",
      "12D3KooW",
    ])
  })

  it("without a command, or with an unknown one, prints the usage on stderr and exits 2", async () => {
    const none = await call([])
    expect(none.status).toBe(2)
    expect(none.stdout).toBe("")
    expect(none.stderr).toContain("usage: control-plane [flags]")
    const unknown = await call(["mesh-router", "--listen", "x"])
    expect(unknown.status).toBe(2)
    expect(unknown.stderr.split("\n")[0]).toBe('unknown command "mesh-router"')
    expect(unknown.stderr).toContain("node join|run [flags]")
  })

  it("help prints the usage on stdout and exits 0", async () => {
    for (const word of ["help", "--help", "-h"]) {
      const result = await call([word])
      expect(result.status).toBe(0)
      expect(result.stdout).toContain("router [flags]")
    }
  })

  it("exits with the program's exit code", async () => {
    expect((await call(["router"], { STUB_EXIT: "3" })).status).toBe(3)
    expect((await call(["node", "run"], { STUB_EXIT: "2" })).status).toBe(2)
  })

  it.each<[string, ReadonlyArray<string>, NodeJS.ProcessEnv, string | undefined]>([
    ["control plane, default address", ["control-plane"], {}, "http://127.0.0.1:8080/healthz"],
    [
      "control plane, flag over environment",
      ["control-plane", "--bind-address", "127.0.0.2:9000"],
      { MESH_BIND_ADDRESS: "127.0.0.3:1" },
      "http://127.0.0.2:9000/healthz",
    ],
    ["control plane, flag=value", ["control-plane", "--bind-address=[::]:8443"], {}, "http://[::1]:8443/healthz"],
    ["control plane, environment", ["control-plane"], { MESH_BIND_ADDRESS: ":81" }, "http://127.0.0.1:81/healthz"],
    ["admin command: none", ["control-plane", "admin", "ban", "--peer", "x"], {}, undefined],
    ["router, its default metrics listener", ["router"], {}, "http://127.0.0.1:9090/healthz"],
    ["router, metrics flag", ["router", "--metrics-addr", "127.0.0.1:7000"], {}, "http://127.0.0.1:7000/healthz"],
    ["router, metrics environment", ["router"], { MESH_METRICS_ADDR: "0.0.0.0:7001" }, "http://127.0.0.1:7001/healthz"],
    ["node run, default socket", ["node", "run"], {}, "unix:DIR/.mesh-node/mesh.sock"],
    [
      "node run, data folder",
      ["node", "run", "--data-dir", "/var/lib/mesh/node"],
      {},
      "unix:/var/lib/mesh/node/mesh.sock",
    ],
    ["node run, socket flag", ["node", "run", "--socket-path=s/api.sock"], {}, "unix:DIR/s/api.sock"],
    [
      "node run, no socket: metrics",
      ["node", "run", "--socket-path", "", "--metrics-addr", ":9100"],
      {},
      "http://127.0.0.1:9100/healthz",
    ],
    ["node run, no socket: TCP listener", ["node", "run"], { MESH_SOCKET_PATH: "" }, "http://127.0.0.1:8080/healthz"],
    [
      "node run, no socket, TLS listener: none",
      ["node", "run", "--socket-path", "", "--tls-cert", "c.pem", "--tls-key", "k.pem"],
      {},
      undefined,
    ],
    ["node join: none", ["node", "join"], {}, undefined],
    ["one, default port", ["one"], {}, "http://127.0.0.1:8080/healthz"],
    ["one, port flag", ["one", "--port", "9080", "--router-port", "4002"], {}, "http://127.0.0.1:9080/healthz"],
  ])("writes the health target: %s", async (_, args, env, expected) => {
    const result = await call(args, env)
    expect(result.status).toBe(0)
    expect(result.health).toBe(expected?.replace("DIR", dir))
  })

  it("gives the router a metrics listener only when none is chosen", async () => {
    expect((await call(["router"])).seen?.metricsAddr).toBe("0.0.0.0:9090")
    expect((await call(["router", "--metrics-addr", "127.0.0.1:7000"])).seen?.metricsAddr).toBeNull()
    expect((await call(["router"], { MESH_METRICS_ADDR: "10.0.0.1:1" })).seen?.metricsAddr).toBe("10.0.0.1:1")
    expect((await call(["node", "run"])).seen?.metricsAddr).toBeNull()
  })

  it("removes a stale health target when the new command has none", async () => {
    expect((await call(["control-plane"])).health).toBeDefined()
    expect((await call(["node", "join"])).health).toBeUndefined()
  })
})

describe("container entry point and health check, with the real programs", () => {
  const shims = shimBinDir(join(dir, "shims"))
  const env = (health: string): NodeJS.ProcessEnv => ({ MESH_BIN_DIR: shims, MESH_HEALTH_FILE: health })

  // The control plane and the node run for real below.
  it("reaches the router's and mesh-one's --help", async () => {
    for (const [role, program] of [
      ["router", "mesh-router"],
      ["one", "mesh-one"],
    ] as const) {
      const result = await runEntrypoint([role, "--help"], { cwd: dir, env: env(join(dir, "help-health")) })
      expect(result.status).toBe(0)
      expect(result.stdout).toContain(program)
    }
  })

  it("the health check passes while a control plane and a node run, and fails once they stop", async () => {
    const cpHealth = join(dir, "cp-health")
    const port = await freePort()
    const controlPlane = startEntrypoint(
      [
        "control-plane",
        "--issuer",
        "http://127.0.0.1:1",
        "--bind-address",
        `127.0.0.1:${port}`,
        "--db-dsn",
        join(dir, "cp.db"),
        "--log-level",
        "warn",
      ],
      { cwd: dir, env: env(cpHealth) },
    )
    children.push(controlPlane)

    const nodeHealth = join(dir, "node-health")
    const node = startEntrypoint(
      ["node", "run", "--data-dir", join(dir, "node"), "--bind-addr", "", "--log-level", "warn"],
      { cwd: dir, env: env(nodeHealth) },
    )
    children.push(node)

    await poll("the control plane's health check", async () =>
      (await healthcheck(cpHealth)).status === 0 ? true : undefined,
    )
    expect(readFileSync(cpHealth, "utf8").trim()).toBe(`http://127.0.0.1:${port}/healthz`)
    await poll("the node's health check", async () => ((await healthcheck(nodeHealth)).status === 0 ? true : undefined))
    expect(readFileSync(nodeHealth, "utf8").trim()).toBe(`unix:${join(dir, "node", "mesh.sock")}`)

    await stop(controlPlane)
    await stop(node)
    const down = await healthcheck(cpHealth)
    expect(down.status).toBe(1)
    expect(down.stderr).toContain(`unhealthy: http://127.0.0.1:${port}/healthz`)
    expect((await healthcheck(nodeHealth)).status).toBe(1)
  })

  it("the health check fails with a reason when the entry point wrote no target", async () => {
    const result = await healthcheck(join(dir, "never-written"))
    expect(result.status).toBe(1)
    expect(result.stderr).toContain("is missing")
  })
})

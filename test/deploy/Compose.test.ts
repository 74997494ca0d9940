/**
 * compose.yaml without a container engine: its shape (roles, flags, secrets in files, start order, volumes), and the
 * example mesh brought up on this machine from the file itself: each service's command and environment, with the
 * volumes as folders, the service names as loopback addresses, and the test standing in for postgres.
 */
import type { ChildProcess } from "node:child_process"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import pg from "pg"
import { parse } from "yaml"
import { freePort } from "../../src/testing/Ports.js"
import { describePostgres } from "../support/databases.js"
import { healthcheck, helpFlags, poll, root, shimBinDir, startEntrypoint, stop } from "./support.js"

interface Service {
  readonly image?: string
  readonly build?: string
  readonly user?: string
  readonly restart?: string
  readonly entrypoint?: ReadonlyArray<string>
  readonly command?: ReadonlyArray<string>
  readonly environment?: Record<string, string>
  readonly volumes?: ReadonlyArray<string>
  readonly healthcheck?: { readonly test?: ReadonlyArray<string>; readonly disable?: boolean }
  readonly depends_on?: Record<string, { readonly condition: string }>
}

/** compose.yaml as compose reads it: merge keys applied, `${VAR:-default}` replaced by its default. */
const compose = parse(readFileSync(join(root, "compose.yaml"), "utf8").replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1"), {
  merge: true,
}) as { services: Record<string, Service>; volumes: Record<string, unknown> }
const services = compose.services

const MESH_IMAGE = "mesh:local"
const ROLES: Record<string, { program: string; subcommand: ReadonlyArray<string> }> = {
  "control-plane": { program: "mesh-control-plane", subcommand: [] },
  router: { program: "mesh-router", subcommand: [] },
  node: { program: "mesh-node", subcommand: ["run"] },
}
const meshServices = Object.entries(services).filter(([, s]) => s.image === MESH_IMAGE && s.entrypoint === undefined)
const initServices = Object.entries(services).filter(([, s]) => s.image === MESH_IMAGE && s.entrypoint !== undefined)

const mountsOf = (service: Service) =>
  (service.volumes ?? []).map((spec) => {
    const [source = "", target = ""] = spec.split(":")
    return { source, target, named: !source.startsWith(".") && !source.startsWith("/") }
  })

/** The flag values of a command line, by flag. */
const flagValues = (command: ReadonlyArray<string>): Map<string, Array<string>> => {
  const values = new Map<string, Array<string>>()
  command.forEach((arg, i) => {
    const next = command[i + 1]
    if (arg.startsWith("--") && next !== undefined && !next.startsWith("--")) {
      values.set(arg, [...(values.get(arg) ?? []), next])
    }
  })
  return values
}

const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`)

describe("compose.yaml", () => {
  it("runs a control plane, postgres, a router and two nodes, set up by two one-shot steps", () => {
    expect(Object.keys(services).sort()).toEqual(
      ["control-plane", "init-mesh", "init-secrets", "node-a", "node-b", "postgres", "router"].sort(),
    )
    expect(meshServices.map(([name]) => name).sort()).toEqual(["control-plane", "node-a", "node-b", "router"])
    for (const [, service] of [...meshServices, ...initServices]) expect(service.build).toBe(".")
    for (const [, service] of initServices) {
      expect(service.entrypoint).toEqual(["node", "/app/deploy/compose/init.mjs"])
      expect(service.restart).toBe("no")
      expect(["secrets", "mesh"]).toContain(service.command?.[0])
    }
  })

  it("gives every mesh service a role of the image and only flags its program knows", async () => {
    for (const [name, service] of meshServices) {
      const command = service.command ?? []
      const role = ROLES[command[0] ?? ""]
      expect(role, `${name}: role ${command[0]}`).toBeDefined()
      if (role === undefined) continue
      expect(command.slice(1, 1 + role.subcommand.length)).toEqual(role.subcommand)
      const known = await helpFlags(role.program, role.subcommand)
      for (const arg of command.filter((a) => a.startsWith("--"))) {
        expect(known.has(arg), `${name}: ${role.program} has no ${arg}`).toBe(true)
      }
    }
  })

  it("keeps secrets in files on volumes, never in environment values or arguments", () => {
    const secretValues = [
      "MESH_ADMIN_TOKEN",
      "MESH_API_TOKEN",
      "MESH_DB_DSN",
      "MESH_BOOTSTRAP_TOKEN",
      "POSTGRES_PASSWORD",
    ]
    for (const [name, service] of Object.entries(services)) {
      for (const key of Object.keys(service.environment ?? {})) {
        expect(secretValues, `${name} sets ${key}`).not.toContain(key)
      }
      const command = service.command ?? []
      expect(command, name).not.toContain("--bootstrap-token")
      expect(command, name).not.toContain("--db-dsn")
      // Every file a flag names is on a mount of that service.
      const mounts = mountsOf(service)
      for (const [flag, values] of flagValues(command)) {
        if (!flag.endsWith("-path") && flag !== "--config") continue
        for (const value of values) {
          expect(
            mounts.some((m) => under(value, m.target)),
            `${name}: ${flag} ${value} is on no volume`,
          ).toBe(true)
        }
      }
    }
    expect(services.postgres?.environment?.POSTGRES_PASSWORD_FILE).toBe("/run/mesh/postgres/password")
  })

  it("starts each service after what it needs, and waits only on conditions that can hold", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8")
    expect(dockerfile).toMatch(/^HEALTHCHECK /m)
    const order: Record<string, Record<string, string>> = {}
    for (const [name, service] of Object.entries(services)) {
      order[name] = {}
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        const target = services[dependency]
        expect(target, `${name} depends on ${dependency}`).toBeDefined()
        if (target === undefined) continue
        order[name][dependency] = condition
        if (condition === "service_completed_successfully") expect(target.restart).toBe("no")
        if (condition === "service_healthy") {
          const checked =
            target.healthcheck?.test !== undefined || (target.image === MESH_IMAGE && !target.healthcheck?.disable)
          expect(checked, `${dependency} has a health check`).toBe(true)
        }
      }
    }
    expect(order).toEqual({
      "init-secrets": {},
      postgres: { "init-secrets": "service_completed_successfully" },
      "control-plane": { postgres: "service_healthy" },
      "init-mesh": { "control-plane": "service_healthy" },
      router: { "init-mesh": "service_completed_successfully" },
      "node-a": { router: "service_healthy" },
      "node-b": { router: "service_healthy" },
    })
  })

  it("declares every named volume it mounts, and every file it binds exists", () => {
    for (const [name, service] of Object.entries(services)) {
      for (const mount of mountsOf(service)) {
        if (mount.named) expect(Object.keys(compose.volumes), `${name}: ${mount.source}`).toContain(mount.source)
        else expect(existsSync(join(root, mount.source)), `${name}: ${mount.source}`).toBe(true)
      }
    }
  })
})

// compose.yaml runs step 1 as root with CHOWN as its only capability; setpriv gives a root process the same.
const asComposeRoot =
  process.getuid?.() === 0 && spawnSync("setpriv", ["--version"]).status === 0 ? describe : describe.skip

asComposeRoot("compose.yaml's first step, as root with CHOWN only", () => {
  it("hands the files to the mesh user, and runs again over them", () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-compose-root-"))
    try {
      const env = Object.fromEntries(
        Object.entries(services["init-secrets"]?.environment ?? {}).map(([key, value]) => [
          key,
          value.startsWith("/run/mesh/") ? join(dir, value.slice("/run/mesh/".length)) : value,
        ]),
      )
      const run = () =>
        spawnSync(
          "setpriv",
          ["--bounding-set=-all,+chown", process.execPath, join(root, "deploy/compose/init.mjs"), "secrets"],
          {
            env: { ...process.env, ...env },
            encoding: "utf8",
          },
        )
      const first = run()
      expect(first.status, first.stderr).toBe(0)
      const second = run()
      expect(second.status, second.stderr).toBe(0)
      expect(second.stdout).toContain("keeping")
      for (const [path, owner, mode] of [
        ["secrets/admin-token", 1000, 0o600],
        ["secrets/db-dsn", 1000, 0o600],
        ["postgres/password", 0, 0o644],
        ["tokens", 1000, 0o700],
      ] as const) {
        const stat = statSync(join(dir, path))
        expect([path, stat.uid, stat.mode & 0o777]).toEqual([path, owner, mode])
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describePostgres("the example mesh of compose.yaml, brought up on this machine", (pgUrl) => {
  const dir = mkdtempSync(join(tmpdir(), "mesh-compose-"))
  const children: Array<ChildProcess> = []
  const schema = `mesh_compose_${process.pid}`
  afterAll(async () => {
    await Promise.all(children.map(stop))
    const client = new pg.Client({ connectionString: pgUrl })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
    rmSync(dir, { recursive: true, force: true })
  })
  const shims = shimBinDir(join(dir, "shims"))

  /** Host and port of each service address in compose.yaml, as this machine gives them. */
  const ports = new Map<string, Promise<number>>()
  const portOf = (key: string): Promise<number> => {
    const port = ports.get(key) ?? freePort()
    ports.set(key, port)
    return port
  }

  /** One value of compose.yaml as it reads on this machine: volumes as folders, addresses on loopback. */
  const translate = async (name: string, value: string): Promise<string> => {
    const cp = `http://127.0.0.1:${await portOf("control-plane:8080")}`
    if (value === "http://control-plane:8080") return cp
    if (value === "0.0.0.0:8080") return `127.0.0.1:${await portOf(`${name}:8080`)}`
    if (value === "0.0.0.0:9090") return `127.0.0.1:${await portOf(`${name}:9090`)}`
    if (value === "/ip4/0.0.0.0/tcp/4001") return `/ip4/127.0.0.1/tcp/${await portOf("router:4001")}`
    if (value === "/dns4/router/tcp/4001") return `/dns4/localhost/tcp/${await portOf("router:4001")}`
    if (under(value, "/app")) return join(root, value.slice("/app".length))
    const mount = mountsOf(services[name] ?? {})
      .filter((m) => under(value, m.target))
      .sort((a, b) => b.target.length - a.target.length)[0]
    if (mount === undefined) return value
    const base = mount.named ? join(dir, "volumes", mount.source) : join(root, mount.source)
    mkdirSync(mount.named ? base : join(dir, "volumes"), { recursive: true })
    return join(base, value.slice(mount.target.length))
  }

  const translated = async (name: string) => {
    const service = services[name]
    if (service === undefined) throw new Error(`no service ${name}`)
    const command = await Promise.all((service.command ?? []).map((v) => translate(name, v)))
    const env: NodeJS.ProcessEnv = {}
    for (const [key, value] of Object.entries(service.environment ?? {})) env[key] = await translate(name, value)
    // The image's user owns what step 1 hands over; here that is whoever runs the test.
    if (env.MESH_INIT_UID !== undefined) env.MESH_INIT_UID = String(process.getuid?.() ?? 0)
    if (env.MESH_INIT_GID !== undefined) env.MESH_INIT_GID = String(process.getgid?.() ?? 0)
    // The image's working directory: the service's volume there, if any.
    const cwd = await translate(name, "/var/lib/mesh")
    mkdirSync(cwd === "/var/lib/mesh" ? join(dir, "work", name) : cwd, { recursive: true })
    return { command, env, cwd: cwd === "/var/lib/mesh" ? join(dir, "work", name) : cwd }
  }

  const runInit = async (name: string) => {
    const { command, env } = await translated(name)
    const entry = await Promise.all((services[name]?.entrypoint ?? []).map((v) => translate(name, v)))
    const result = spawnSync(process.execPath, [...entry.slice(1), ...command], {
      env: { ...process.env, ...env },
      encoding: "utf8",
      timeout: 120_000,
    })
    expect(result.status, result.stderr).toBe(0)
    return result.stdout
  }

  const logs = new Map<string, string>()
  const start = async (name: string) => {
    const { command, env, cwd } = await translated(name)
    const health = join(dir, `${name}.health`)
    const child = startEntrypoint(command, {
      cwd,
      env: { ...env, MESH_BIN_DIR: shims, MESH_HEALTH_FILE: health, MESH_LOG_LEVEL: "warn" },
    })
    children.push(child)
    logs.set(name, "")
    child.stderr?.on("data", (chunk) => {
      logs.set(name, `${logs.get(name) ?? ""}${chunk}`)
    })
    await poll(`${name}'s health check`, async () =>
      (await healthcheck(health)).status === 0 ? true : undefined,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; ${name} said: ${(logs.get(name) ?? "").slice(-2000)}`)
    })
    return child
  }

  const volume = (name: string, ...path: Array<string>) => join(dir, "volumes", name, ...path)
  const mode = (path: string) => statSync(path).mode & 0o777

  const readyOverSocket = (socketPath: string) =>
    new Promise<{ status: string; mesh: string }>((resolve, reject) => {
      request({ socketPath, path: "/readyz" }, (response) => {
        let body = ""
        response.on("data", (chunk) => {
          body += chunk
        })
        response.on("end", () => resolve(JSON.parse(body)))
      })
        .on("error", reject)
        .end()
    })

  it("makes its secrets, applies the policy, mints tokens, and the router and both nodes join", async () => {
    // Step 1: secrets, kept by a second run.
    await runInit("init-secrets")
    const adminToken = readFileSync(volume("secrets", "admin-token"), "utf8").trim()
    const password = readFileSync(volume("postgres-secret", "password"), "utf8").trim()
    expect(adminToken).toMatch(/^mesh-admin-[0-9a-f]{64}$/)
    expect(readFileSync(volume("secrets", "db-dsn"), "utf8").trim()).toBe(
      `postgres://mesh:${password}@postgres:5432/mesh`,
    )
    expect(mode(volume("secrets", "admin-token"))).toBe(0o600)
    expect(mode(volume("secrets", "db-dsn"))).toBe(0o600)
    expect(mode(volume("postgres-secret", "password"))).toBe(0o644)
    expect(mode(volume("tokens"))).toBe(0o700)
    expect(await runInit("init-secrets")).toContain("keeping")
    expect(readFileSync(volume("secrets", "admin-token"), "utf8").trim()).toBe(adminToken)

    // postgres: this machine's server, in a schema of its own, in place of the one the DSN names.
    const client = new pg.Client({ connectionString: pgUrl })
    await client.connect()
    await client.query(`CREATE SCHEMA ${schema}`)
    await client.end()
    const dsn = new URL(pgUrl)
    dsn.searchParams.set("options", `-c search_path=${schema}`)
    writeFileSync(volume("secrets", "db-dsn"), `${dsn}\n`, { mode: 0o600 })

    await start("control-plane")
    const cp = `http://127.0.0.1:${await portOf("control-plane:8080")}`

    // Step 2: policy and tokens, kept by a second run.
    await runInit("init-mesh")
    const tokens = ["router", "node-a", "node-b"].map((name) => readFileSync(volume("tokens", name), "utf8").trim())
    for (const token of tokens) expect(token).toMatch(/^mesh-bt-[0-9a-f]{32}$/)
    expect(mode(volume("tokens", "router"))).toBe(0o600)
    const policy = (await (
      await fetch(`${cp}/policies`, { headers: { authorization: `Bearer ${adminToken}`, accept: "application/json" } })
    ).json()) as { policy: { roles: Array<{ name: string; allowedLabels: Array<string> }> } }
    expect(policy.policy.roles.map((r) => [r.name, r.allowedLabels])).toEqual([["mesh:role:node", ["zone=*"]]])
    expect(await runInit("init-mesh")).toContain("keeping")
    expect(readFileSync(volume("tokens", "router"), "utf8").trim()).toBe(tokens[0])

    // The router enrolls with its token and leases the address nodes dial.
    await start("router")
    const routerPort = await portOf("router:4001")
    const status = async () =>
      (await (await fetch(`${cp}/admin/status`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as {
        routers: Array<{ addresses: Array<string> }>
        nodes: Array<{ role: string; labels: Record<string, string> }>
      }
    const routers = await poll("the router's lease", async () => {
      const current = (await status()).routers
      return current.length === 1 ? current : undefined
    })
    expect(routers[0]?.addresses[0]).toMatch(new RegExp(`^/dns4/localhost/tcp/${routerPort}/p2p/12D3KooW`))

    // Both nodes enroll with their tokens and reach the router through the announced name.
    await Promise.all([start("node-a"), start("node-b")])
    for (const name of ["node-a", "node-b"]) {
      const socket = volume(`${name}-data`, "node", "mesh.sock")
      await poll(`${name} connected`, async () =>
        (await readyOverSocket(socket)).mesh === "connected" ? true : undefined,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; ${name} said: ${(logs.get(name) ?? "").slice(-1500)}`)
      })
    }
    const nodes = (await status()).nodes.filter((n) => n.role === "mesh:role:node")
    expect(nodes.map((n) => n.labels.zone).sort()).toEqual(["compose-a", "compose-b"])
  }, 300_000)
})

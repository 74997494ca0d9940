/**
 * The Nix pieces: the module's options against the programs' real flags (flags.json is the module's table of
 * options), and, where nix-instantiate is installed (CI installs Debian's nix-bin), every .nix file parsed, the
 * module's command lines evaluated and run, and the lockfile plan of the package evaluated against the real lockfile.
 */
import type { ChildProcess } from "node:child_process"
import { spawn, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { freePort } from "../../src/testing/Ports.js"
import { nodeArgs } from "../support/processes.js"
import { buildReads, helpFlags, poll, root, stop } from "./support.js"

interface OptionSpec {
  readonly flag: string
  readonly type: "str" | "int" | "bool" | "listComma" | "listRepeat" | "file"
  readonly description: string
}
interface Section {
  readonly program: string
  readonly subcommand: ReadonlyArray<string>
  readonly unit: string
  readonly managed: ReadonlyArray<string>
  readonly options: Record<string, OptionSpec>
}

const table = JSON.parse(readFileSync(join(root, "nix", "flags.json"), "utf8")) as Record<string, Section>
const moduleText = readFileSync(join(root, "nix", "module.nix"), "utf8")

/** Options whose name is not the flag's: `config` would read as the module system's own. */
const ALIASES: Record<string, string> = { configFile: "--config" }
/** Options the module declares itself, which map to no flag. */
const MODULE_OWN = ["package", "extraArgs", "environment", "settings", "path"]

const camel = (flag: string) => flag.replace(/^--/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())

describe("NixOS module options", () => {
  it("covers the three services", () => {
    expect(Object.keys(table).sort()).toEqual(["controlPlane", "node", "router"])
    for (const section of Object.keys(table)) {
      expect(moduleText).toContain(`flagOptions table.${section}.options`)
    }
  })

  it.each(Object.entries(table))("%s: every option is a flag of the program", async (_, section) => {
    const known = await helpFlags(section.program, section.subcommand)
    for (const [option, spec] of Object.entries(section.options)) {
      expect(known.has(spec.flag), `${option}: ${section.program} has no ${spec.flag}`).toBe(true)
      expect(spec.flag, `${option} mirrors its flag`).toBe(
        ALIASES[option] ?? `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
      )
      expect(camel(spec.flag) === option || ALIASES[option] === spec.flag).toBe(true)
      expect(spec.description.length).toBeGreaterThan(0)
    }
    for (const flag of section.managed) expect(known.has(flag), `managed ${flag}`).toBe(true)
  })

  it("passes files (secrets among them) as paths, never a secret as a value", () => {
    for (const section of Object.values(table)) {
      for (const [option, spec] of Object.entries(section.options)) {
        // Every file the program reads (the socket is one it makes).
        if (spec.flag.endsWith("-path") && spec.flag !== "--socket-path") expect(spec.type, option).toBe("file")
        expect(["--bootstrap-token", "--admin-token", "--api-token"]).not.toContain(spec.flag)
      }
    }
  })

  it("declares by hand only the module's own options", () => {
    const declared = [...moduleText.matchAll(/^\s*(\w+) = mkOption\b/gm)].map((m) => m[1])
    expect(declared.length).toBeGreaterThan(0)
    for (const name of declared) expect(MODULE_OWN, `${name} is declared by hand`).toContain(name)
  })

  it("hardens every service", () => {
    for (const setting of [
      "DynamicUser = true",
      'ProtectSystem = "strict"',
      "NoNewPrivileges = true",
      'Restart = "on-failure"',
      "PrivateTmp = true",
      "ProtectHome = true",
      'CapabilityBoundingSet = ""',
      '"AF_UNIX"',
      "StateDirectory = service.unit",
      "LoadCredential = built.credentials",
    ]) {
      expect(moduleText).toContain(setting)
    }
  })
})

const hasNix = spawnSync("nix-instantiate", ["--version"], { encoding: "utf8" }).status === 0
const describeNix = hasNix ? describe : describe.skip

const nixFiles = (): Array<string> => [
  join(root, "flake.nix"),
  ...readdirSync(join(root, "nix"))
    .filter((f) => f.endsWith(".nix"))
    .map((f) => join(root, "nix", f)),
]

const nixEval = (expression: string): unknown => {
  const result = spawnSync("nix-instantiate", ["--eval", "--strict", "--json", "-E", expression], {
    encoding: "utf8",
    timeout: 120_000,
  })
  if (result.status !== 0) throw new Error(`nix-instantiate: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** The module's arguments for one section, as nix/args.nix builds them from option values. */
const argsOf = (section: string, values: string) =>
  nixEval(
    `import ${join(root, "nix", "args.nix")} { service = (builtins.fromJSON (builtins.readFile ${join(root, "nix", "flags.json")})).${section}; values = ${values}; }`,
  ) as { args: Array<string>; credentials: Array<string> }

describeNix(`Nix files${hasNix ? "" : " (skipped: nix-instantiate is not installed)"}`, () => {
  const dir = mkdtempSync(join(tmpdir(), "mesh-nix-"))
  const children: Array<ChildProcess> = []
  afterAll(async () => {
    await Promise.all(children.map(stop))
    rmSync(dir, { recursive: true, force: true })
  })

  /** What systemd does with LoadCredential: copies each file into the credentials directory (%d). */
  const systemdArgs = (built: { args: Array<string>; credentials: Array<string> }, name: string) => {
    const credentials = join(dir, `${name}-credentials`)
    mkdirSync(credentials, { recursive: true })
    for (const entry of built.credentials) {
      const [id = "", path = ""] = entry.split(":")
      copyFileSync(path, join(credentials, id))
    }
    return built.args.map((arg) => arg.replace(/^%d\//, `${credentials}/`))
  }

  it("every .nix file parses", () => {
    for (const file of nixFiles()) {
      const result = spawnSync("nix-instantiate", ["--parse", file], { encoding: "utf8" })
      expect(result.status, `${file}: ${result.stderr}`).toBe(0)
    }
  })

  it("builds each program's arguments from option values: every type, only known flags", async () => {
    const cp = argsOf(
      "controlPlane",
      '{ issuer = [ "https://a.example" "https://b.example" ]; autoApproveEnrollment = true; insecureSkipTlsVerify = false; enrollRateLimit = 5; adminTokenPath = /run/keys/admin; oidcClientId = null; }',
    )
    expect(cp.args).toEqual([
      "--admin-token-path",
      "%d/adminTokenPath",
      "--auto-approve-enrollment",
      "--enroll-rate-limit",
      "5",
      "--issuer",
      "https://a.example,https://b.example",
    ])
    expect(cp.credentials).toEqual(["adminTokenPath:/run/keys/admin"])
    const router = argsOf(
      "router",
      '{ listen = [ "/ip4/0.0.0.0/tcp/4001" "/ip6/::/tcp/4001" ]; externalAddr = [ ]; controlPlane = "https://cp.example"; }',
    )
    expect(router.args).toEqual([
      "--control-plane",
      "https://cp.example",
      "--listen",
      "/ip4/0.0.0.0/tcp/4001",
      "--listen",
      "/ip6/::/tcp/4001",
    ])
    const node = argsOf("node", '{ bindAddr = ""; configFile = "/etc/mesh-node.yaml"; }')
    expect(node.args).toEqual(["run", "--bind-addr", "", "--config", "%d/configFile"])
    for (const [section, built] of [
      ["controlPlane", cp],
      ["router", router],
      ["node", node],
    ] as const) {
      const known = await helpFlags(table[section]?.program ?? "", table[section]?.subcommand ?? [])
      for (const arg of built.args.filter((a) => a.startsWith("--"))) expect(known.has(arg), arg).toBe(true)
    }
  })

  it("starts the real control plane and node with the module's arguments and credentials", async () => {
    const port = await freePort()
    const admin = join(dir, "admin-token")
    const dsn = join(dir, "dsn")
    spawnSync("sh", [
      "-c",
      `printf 'nix-test-admin-token\\n' > ${admin}; printf '%s\\n' ${join(dir, "cp.db")} > ${dsn}`,
    ])
    const cpArgs = systemdArgs(
      argsOf(
        "controlPlane",
        `{ issuer = [ "http://127.0.0.1:1" ]; bindAddress = "127.0.0.1:${port}"; dbDriver = "sqlite"; dbDsnPath = ${dsn}; adminTokenPath = ${admin}; logLevel = "warn"; }`,
      ),
      "cp",
    )
    const cp = spawn(process.execPath, nodeArgs("mesh-control-plane", cpArgs), { stdio: "ignore" })
    children.push(cp)
    const status = await poll("the control plane", async () => {
      const response = await fetch(`http://127.0.0.1:${port}/admin/status`, {
        headers: { authorization: "Bearer nix-test-admin-token" },
      })
      return response.status
    })
    expect(status).toBe(200)
    expect(existsSync(join(dir, "cp.db"))).toBe(true)

    const config = join(dir, "mesh-node.yaml")
    spawnSync("sh", ["-c", `printf 'labels:\\n  zone: nix\\n' > ${config}`])
    const socket = join(dir, "node", "mesh.sock")
    const nodeArgv = systemdArgs(
      argsOf("node", `{ configFile = ${config}; bindAddr = ""; socketPath = "${socket}"; logLevel = "warn"; }`),
      "node",
    )
    const node = spawn(process.execPath, nodeArgs("mesh-node", [...nodeArgv, "--data-dir", join(dir, "node")]), {
      stdio: "ignore",
    })
    children.push(node)
    const ready = await poll("the node", () =>
      existsSync(socket)
        ? new Promise<string>((resolve, reject) => {
            request({ socketPath: socket, path: "/readyz" }, (response) => {
              let body = ""
              response.on("data", (chunk) => {
                body += chunk
              })
              response.on("end", () => resolve(body))
            })
              .on("error", reject)
              .end()
          })
        : undefined,
    )
    expect(JSON.parse(ready)).toEqual({ status: "ready", mesh: "login_required" })
  })

  it("the package fetches every package npm installs here, and leaves the pinned Node runtime to Nix", () => {
    const plan = nixEval(
      `let p = import ${join(root, "nix", "npm-lock.nix")} { package = builtins.fromJSON (builtins.readFile ${join(root, "package.json")}); lock = builtins.fromJSON (builtins.readFile ${join(root, "package-lock.json")}); os = "linux"; cpu = "${process.arch}"; }; in { inherit (p) tarballs; optional = p.package.optionalDependencies or { }; packages = builtins.mapAttrs (k: v: v.resolved or null) p.lock.packages; }`,
    ) as {
      tarballs: Record<string, { name: string; version: string; integrity: string }>
      optional: Record<string, string>
      packages: Record<string, string | null>
    }
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version: string; integrity: string }>
    }
    expect(Object.keys(plan.optional).filter((n) => n.startsWith("node-linux-"))).toEqual([])
    expect(Object.keys(plan.packages).filter((k) => k.includes("node_modules/node-linux-"))).toEqual([])
    // npm ci on this linux-x64 machine installed exactly the packages below node_modules/.
    const installed = Object.keys(lock.packages).filter(
      (key) => key !== "" && !key.includes("node-linux-") && existsSync(join(root, key, "package.json")),
    )
    expect(installed.length).toBeGreaterThan(100)
    for (const key of installed) {
      const file = plan.packages[key]
      expect(file, `${key} is fetched`).toBeTypeOf("string")
      const tarball = plan.tarballs[file ?? ""]
      expect(tarball?.version, key).toBe(lock.packages[key]?.version)
      expect(tarball?.integrity, key).toBe(lock.packages[key]?.integrity)
    }
  })
})

describe("the Nix package", () => {
  it("the package's source set holds everything `npm run build` reads", () => {
    const text = readFileSync(join(root, "nix", "package.nix"), "utf8")
    const unions = /fileset = lib\.fileset\.unions \[([^\]]*)\]/.exec(text)?.[1] ?? ""
    const sources = [...unions.matchAll(/\.\.\/(\S+)/g)].map((m) => m[1])
    expect(sources.length).toBeGreaterThan(0)
    for (const path of buildReads()) expect(sources, `nix/package.nix's source set has ${path}`).toContain(path)
  })
})

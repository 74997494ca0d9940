/**
 * mesh-one as a developer runs it: one process with a control plane, an OIDC issuer, a router and two nodes, each
 * node with a demo service behind it. The three commands its table prints are run as printed, through `sh -c` from
 * the repository's root (the stock MCP SDK client and the `openai` package in the scripts they name, curl), and must
 * reach the service across the mesh. Ctrl-C stops everything; a taken port is one line naming its flag.
 */
import { execFile, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fromBinary } from "@bufbuild/protobuf"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Banner from "../../src/cli/one/Banner.js"
import { ControlPlaneInfoResponseSchema } from "../../src/gen/mesh_pb.js"
import { nodeArgs, runBin } from "../support/processes.js"

const root = join(import.meta.dirname, "..", "..")
const dir = mkdtempSync(join(tmpdir(), "mesh-one-test-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const ANY_PORTS = [
  "--port",
  "--issuer-port",
  "--router-port",
  "--node-port",
  "--node-b-port",
  "--demo-mcp-port",
  "--demo-inference-port",
].flatMap((flag) => [flag, "0"])

interface Started {
  readonly out: string
  readonly controlPlane: string
  readonly issuer: string
  readonly nodeA: string
  readonly nodeB: string
  readonly demoModel: string
  /** The commands under "Try it", in order. */
  readonly commands: ReadonlyArray<string>
  /** Sends `signal` and resolves with the exit code once the process is gone. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

const field = (out: string, label: string) => {
  const value = new RegExp(`^  ${label}\\s+(http://\\S+)`, "m").exec(out)?.[1]
  if (value === undefined) throw new Error(`no ${label} in: ${out}`)
  return value
}

/** Starts mesh-one from the repository's root on ephemeral ports; resolves once it printed its table. */
const startMeshOne = () =>
  new Promise<Started>((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs("mesh-one", ["--data-dir", dir, ...ANY_PORTS]), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    })
    let out = ""
    let err = ""
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString()
    })
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString()
      if (!out.includes("Press Ctrl-C")) return
      const lines = out.split("\n")
      resolve({
        out,
        controlPlane: field(out, "control plane"),
        issuer: field(out, "OIDC issuer"),
        nodeA: field(out, "node A"),
        nodeB: field(out, "node B"),
        demoModel: field(out, "demo model"),
        commands: lines.flatMap((line, i) => (/^ {2}# \d\. /.test(line) ? [(lines[i + 1] ?? "").trim()] : [])),
        stop: (signal = "SIGINT") => {
          child.kill(signal)
          return exited
        },
      })
    })
    void exited.then((code) => reject(new Error(`mesh-one exited with ${code}: ${out}\n${err.slice(-2000)}`)))
  })

/** Runs a printed command as a user's shell would, from the repository's root. */
const sh = (command: string) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) => {
    execFile("sh", ["-c", command], { cwd: root, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr }),
    )
  })

const peerOf = async (nodeUrl: string, tokenPath: string) => {
  const token = readFileSync(tokenPath, "utf8").trim()
  const info = await fetch(`${nodeUrl}/debug/mesh-info`, { headers: { "x-mesh-authentication": `Bearer ${token}` } })
  return ((await info.json()) as { peer_id: string }).peer_id
}

describe("mesh-one", () => {
  it("prints three commands that work as printed, each crossing the mesh, and stops on Ctrl-C", {
    timeout: 300_000,
  }, async () => {
    const mesh = await startMeshOne()
    let stopped = false
    try {
      expect(mesh.out).toContain("ready: node B sees mcp://demo on node A")
      for (const component of ["OIDC issuer", "control plane", "router", "node A", "node B"]) {
        expect(mesh.out).toMatch(new RegExp(`^ {2}started ${component} `, "m"))
      }
      expect(mesh.commands).toHaveLength(3)
      const peerA = await peerOf(mesh.nodeA, join(dir, "node-a", "api-token"))
      const peerB = await peerOf(mesh.nodeB, join(dir, "node-b", "api-token"))
      expect(peerA).not.toBe(peerB)
      const [callTool, models, chat] = mesh.commands as [string, string, string]

      // 1. An MCP client on node B finds the demo tools on node A and calls them there.
      expect(callTool).toContain(mesh.nodeB)
      const tool = await sh(callTool)
      expect(tool.code, tool.stderr).toBe(0)
      const digest = createHash("sha256").update("hello from the mesh").digest("hex")
      expect(tool.stdout).toBe(
        `mcp://demo is on peer ${peerA}\n` +
          `word_count("hello from the mesh") = 4 words, 1 line, 19 characters\n` +
          `sha256("hello from the mesh") = ${digest}\n`,
      )

      // 2. Node A, which serves no model, lists node B's.
      expect(models).toContain(mesh.nodeA)
      const list = await sh(models)
      expect(list.code, list.stderr).toBe(0)
      expect(JSON.parse(list.stdout)).toEqual({
        object: "list",
        data: [{ id: "mesh-demo", object: "model", created: 0, owned_by: peerB }],
      })

      // 3. The OpenAI SDK on node A streams a completion from node B's provider.
      expect(chat).toContain(`${mesh.nodeA}/v1`)
      const answer = await sh(chat)
      expect(answer.code, answer.stderr).toBe(0)
      expect(answer.stdout).toBe("Hello from the mesh! You said: which way did you come?\n")

      // Ctrl-C stops every component: exit 0, and nothing answers on their ports any more.
      stopped = true
      expect(await mesh.stop("SIGINT")).toBe(0)
      for (const url of [mesh.controlPlane, mesh.issuer, mesh.nodeA, mesh.nodeB, mesh.demoModel]) {
        await expect(fetch(`${url}/healthz`), url).rejects.toThrow()
      }
      expect(existsSync(join(dir, "node-a", "mesh.sock"))).toBe(false)
    } finally {
      if (!stopped) await mesh.stop("SIGKILL")
    }
  })

  it("keeps a control plane whose routes answer, its secrets, and a node's own services in mesh-node.yaml across restarts", {
    timeout: 300_000,
  }, async () => {
    const mesh = await startMeshOne()
    try {
      expect(await (await fetch(`${mesh.controlPlane}/healthz`)).json()).toEqual({ status: "ok" })
      expect(await (await fetch(`${mesh.controlPlane}/readyz`)).json()).toMatchObject({ status: "ready" })
      expect(await (await fetch(`${mesh.controlPlane}/metrics`)).text()).toContain("process_resident_memory_bytes")
      // The console is there, and users can sign in to it through the development issuer.
      expect((await fetch(`${mesh.controlPlane}/console`)).status).toBe(200)
      expect(await (await fetch(`${mesh.controlPlane}/console/sign-in`)).json()).toMatchObject({
        authorization_endpoint: `${mesh.issuer}/authorize`,
      })
      // The router enrolled and holds a lease: the control plane lists it.
      const body = new Uint8Array(await (await fetch(`${mesh.controlPlane}/info`)).arrayBuffer())
      const info = fromBinary(ControlPlaneInfoResponseSchema, body)
      expect(info.routerAddresses[0]).toMatch(/^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/12D3KooW/)
      const discovery = (await (await fetch(`${mesh.issuer}/.well-known/openid-configuration`)).json()) as {
        issuer: string
      }
      expect(discovery.issuer).toBe(mesh.issuer)
      const token = await fetch(`${mesh.issuer}/token`, { method: "POST", body: JSON.stringify({ sub: "alice" }) })
      expect(((await token.json()) as { id_token: string }).id_token.split(".")).toHaveLength(3)
    } finally {
      await mesh.stop("SIGTERM")
    }
    // Secrets are made once, private to their owner, and kept across restarts.
    const tokenFile = join(dir, "admin-token")
    for (const file of ["admin-token", "control-plane.db", "node-a/api-token", "node-b/api-token"]) {
      expect(statSync(join(dir, file)).mode & 0o777, file).toBe(0o600)
    }
    const first = readFileSync(tokenFile, "utf8")
    const nodeToken = readFileSync(join(dir, "node-a", "api-token"), "utf8")
    // As the README says: uncomment the example in node A's mesh-node.yaml, start again, call it from node B.
    const config = join(dir, "node-a", "mesh-node.yaml")
    writeFileSync(
      config,
      readFileSync(config, "utf8")
        .replace(/^# services:/m, "services:")
        .replace(/^# {3}/gm, "  "),
    )
    const again = await startMeshOne()
    try {
      // The table lists what each node publishes, the user's own service next to the demo.
      expect(again.out).toMatch(/^ {2}node A {10}http:\S+ +publishes mcp:\/\/demo \(mesh-one's demo tools/m)
      expect(again.out).toMatch(/^ {48}publishes mcp:\/\/everything \(The MCP reference server\)$/m)
      const tokenB = readFileSync(join(dir, "node-b", "api-token"), "utf8").trim()
      const published = async () => {
        const answer = await fetch(`${again.nodeB}/mesh/service/discover?type=mcp&name=everything`, {
          headers: { "x-mesh-authentication": `Bearer ${tokenB}` },
        })
        return ((await answer.json()) as ReadonlyArray<unknown>).length > 0
      }
      // The stdio server is started and probed once the node is up: allow it a loaded machine's minute.
      for (let i = 0; i < 240 && !(await published()); i++) await new Promise((r) => setTimeout(r, 250))
      const echo = await sh(`${again.commands[0]} mcp://everything/echo '{"message":"hi"}'`)
      expect(echo.code, echo.stderr).toBe(0)
      expect(echo.stdout).toContain('echo({"message":"hi"}) = Echo: hi\n')
    } finally {
      await again.stop("SIGTERM")
    }
    expect(readFileSync(tokenFile, "utf8")).toBe(first)
    expect(readFileSync(join(dir, "node-a", "api-token"), "utf8")).toBe(nodeToken)
  })

  it("refuses a taken port in one line naming the port and the flag that moves it", async () => {
    const holder = createServer()
    const port = await new Promise<number>((resolve) =>
      holder.listen(0, "127.0.0.1", () => resolve((holder.address() as { port: number }).port)),
    )
    try {
      const args = ["--data-dir", join(dir, "taken"), ...ANY_PORTS]
      const at = args.indexOf("--node-b-port")
      args[at + 1] = String(port)
      const result = await runBin("mesh-one", args)
      expect(result.status).not.toBe(0)
      expect(result.stderr.trim()).toBe(
        `mesh-one: port ${port} (node B) is taken; choose another with --node-b-port <port>`,
      )
    } finally {
      holder.close()
    }
  })
})

describe("the README", () => {
  it("shows the three commands mesh-one prints with its default ports and data folder", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    const data = join(root, ".mesh-one")
    const node = (name: string, port: number) => ({
      url: `http://127.0.0.1:${port}`,
      tokenPath: join(data, name, "api-token"),
      socket: join(data, name, "mesh.sock"),
      configPath: join(data, name, "mesh-node.yaml"),
      services: [],
    })
    const printed = Banner.commands({
      dataDir: data,
      controlPlane: "http://127.0.0.1:8080",
      issuer: "http://127.0.0.1:8090",
      routers: [],
      a: node("node-a", 8081),
      b: node("node-b", 8082),
      demoMcp: "http://127.0.0.1:8091/mcp",
      demoInference: "http://127.0.0.1:8092",
      examples: join(root, "examples", "try"),
      cwd: root,
    })
    expect(printed).toHaveLength(3)
    for (const [, command] of printed) expect(readme).toContain(`\n${command}\n`)
  })
})

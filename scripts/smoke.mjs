#!/usr/bin/env node
// Smoke test of the built programs (`npm run build` first) on the Node that runs this script: a control plane on
// sqlite, a router that enrolls with a bootstrap token and takes a lease, and a node that joins. CI runs it on the
// oldest supported Node (`.ci/run`); `node scripts/smoke.mjs` runs it on any other. Everything listens on loopback
// and is stopped at the end; the run is bounded (each wait gives up after 60 s).
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

const bin = (name) => new URL(`../dist/bin/${name}.js`, import.meta.url).pathname
if (!existsSync(bin("mesh-control-plane"))) throw new Error("dist/ is missing: run `npm run build` first")

const dir = mkdtempSync(join(tmpdir(), "mesh-smoke-"))
const children = []
const output = new Map()

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

const start = (name, args, env = {}) => {
  const child = spawn(process.execPath, [bin(name), ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  output.set(name, "")
  const keep = (chunk) => output.set(name, output.get(name) + chunk.toString())
  child.stdout.on("data", keep)
  child.stderr.on("data", keep)
  children.push(child)
  return child
}

const until = async (what, attempt) => {
  for (let i = 0; i < 600; i++) {
    const value = await attempt().catch(() => undefined)
    if (value !== undefined) return value
    if (children.some((c) => c.exitCode !== null)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`no ${what}`)
}

const stopAll = () =>
  Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.once("exit", resolve)
          child.kill("SIGTERM")
        }),
    ),
  )

const main = async () => {
  const adminToken = randomBytes(32).toString("hex")
  const adminTokenFile = join(dir, "admin-token")
  writeFileSync(adminTokenFile, `${adminToken}\n`, { mode: 0o600 })
  const url = `http://127.0.0.1:${await freePort()}`
  start("mesh-control-plane", [
    // Bootstrap-token enrollments never consult the issuer; the flag is required all the same.
    ...["--issuer", "http://127.0.0.1:1"],
    ...["--bind-address", url.slice("http://".length)],
    ...["--db-dsn", join(dir, "control-plane.db")],
    ...["--admin-token-path", adminTokenFile],
    "--auto-approve-enrollment",
    ...["--log-level", "warn"],
  ])
  await until("ready control plane", async () => ((await fetch(`${url}/readyz`)).ok ? true : undefined))

  const admin = async (method, path, body) => {
    const answer = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`)
    return answer.json()
  }
  const tokenFile = async (role) => {
    const file = join(dir, `${role.split(":").pop()}-token`)
    writeFileSync(file, `${(await admin("POST", "/admin/bootstrap-tokens", { role })).token}\n`, { mode: 0o600 })
    return file
  }

  start("mesh-router", [
    ...["--control-plane", url],
    ...["--listen", "/ip4/127.0.0.1/tcp/0"],
    ...["--data-dir", join(dir, "router")],
    ...["--bootstrap-token-path", await tokenFile("mesh:role:router")],
    ...["--log-level", "warn"],
  ])
  const router = await until("router lease", async () => (await admin("GET", "/admin/status")).routers[0])

  const joined = await promisify(execFile)(
    process.execPath,
    [
      bin("mesh-node"),
      "join",
      ...["--control-plane", url],
      ...["--data-dir", join(dir, "node")],
      ...["--bootstrap-token-path", await tokenFile("mesh:role:node")],
      ...["--log-level", "warn"],
    ],
    { timeout: 60_000 },
  )
  const nodePeer = /peer id\s+(\S+)/.exec(joined.stdout)?.[1]
  const status = await admin("GET", "/admin/status")
  if (nodePeer === undefined || !status.nodes.some((n) => n.peer_id === nodePeer)) {
    throw new Error(`the node did not enroll:\n${joined.stdout}${joined.stderr}`)
  }
  process.stdout.write(
    `smoke on Node ${process.version}: control plane ready, router ${router.peer_id} leased, node ${nodePeer} enrolled\n`,
  )
}

try {
  await main()
} catch (error) {
  process.exitCode = 1
  process.stderr.write(`smoke on Node ${process.version} failed: ${error instanceof Error ? error.message : error}\n`)
  for (const [name, text] of output) if (text.length > 0) process.stderr.write(`--- ${name}\n${text}\n`)
} finally {
  await stopAll()
  rmSync(dir, { recursive: true, force: true })
}

import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fromBinary } from "@bufbuild/protobuf"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { ControlPlaneInfoResponseSchema } from "../../src/gen/mesh_pb.js"
import { nodeArgs } from "../support/processes.js"

const dir = mkdtempSync(join(tmpdir(), "mesh-one-test-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Starts mesh-one on ephemeral ports and resolves with the URLs its banner prints. */
const startMeshOne = () =>
  new Promise<{ controlPlane: string; issuer: string; node: string; stop: () => Promise<void> }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      nodeArgs("mesh-one", [
        "--data-dir",
        dir,
        "--port",
        "0",
        "--issuer-port",
        "0",
        "--router-port",
        "0",
        "--node-port",
        "0",
      ]),
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    )
    let out = ""
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString()
      const cp = /control plane\s+(http:\/\/\S+)/.exec(out)?.[1]
      const issuer = /OIDC issuer\s+(http:\/\/\S+)/.exec(out)?.[1]
      const node = /node\s+(http:\/\/\S+)/.exec(out)?.[1]
      if (cp !== undefined && issuer !== undefined && node !== undefined && out.includes("Press Ctrl-C")) {
        resolve({
          controlPlane: cp,
          issuer,
          node,
          stop: () =>
            new Promise((done) => {
              child.once("exit", () => done())
              child.kill("SIGTERM")
            }),
        })
      }
    })
    child.once("exit", (code) => reject(new Error(`mesh-one exited with ${code}: ${out}`)))
  })

describe("mesh-one", () => {
  it("brings up a control plane whose healthz, readyz and metrics answer, a development issuer, a router and a node", async () => {
    const mesh = await startMeshOne()
    try {
      expect(await (await fetch(`${mesh.controlPlane}/healthz`)).json()).toEqual({ status: "ok" })
      expect(await (await fetch(`${mesh.controlPlane}/readyz`)).json()).toEqual({ status: "ready" })
      expect(await (await fetch(`${mesh.controlPlane}/metrics`)).text()).toContain("process_resident_memory_bytes")
      // The console is there, and users can sign in to it through the development issuer.
      expect((await fetch(`${mesh.controlPlane}/console`)).status).toBe(200)
      expect(await (await fetch(`${mesh.controlPlane}/console/sign-in`)).json()).toMatchObject({
        authorization_endpoint: `${mesh.issuer}/authorize`,
      })
      // The router enrolled and holds a lease: the control plane lists it.
      const info = await (async () => {
        for (let i = 0; i < 50; i++) {
          const body = new Uint8Array(await (await fetch(`${mesh.controlPlane}/info`)).arrayBuffer())
          const decoded = fromBinary(ControlPlaneInfoResponseSchema, body)
          if (decoded.routerAddresses.length > 0) return decoded
          await new Promise((r) => setTimeout(r, 100))
        }
        throw new Error("the router never appeared on /info")
      })()
      expect(info.routerAddresses[0]).toMatch(/^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/12D3KooW/)
      const discovery = (await (await fetch(`${mesh.issuer}/.well-known/openid-configuration`)).json()) as {
        issuer: string
      }
      expect(discovery.issuer).toBe(mesh.issuer)
      const token = await fetch(`${mesh.issuer}/token`, { method: "POST", body: JSON.stringify({ sub: "alice" }) })
      expect(((await token.json()) as { id_token: string }).id_token.split(".")).toHaveLength(3)
      // The node answers with the API token the banner points at, and joins the mesh through the router.
      const apiToken = readFileSync(join(dir, "node", "api-token"), "utf8").trim()
      expect(statSync(join(dir, "node", "api-token")).mode & 0o777).toBe(0o600)
      const meshInfo = async () =>
        (await (
          await fetch(`${mesh.node}/debug/mesh-info`, { headers: { "x-mesh-authentication": `Bearer ${apiToken}` } })
        ).json()) as { connected?: boolean }
      let connected = false
      for (let i = 0; i < 100 && !connected; i++) {
        connected = (await meshInfo()).connected === true
        if (!connected) await new Promise((r) => setTimeout(r, 100))
      }
      expect(connected).toBe(true)
    } finally {
      await mesh.stop()
    }
    // The admin token is made once, private to its owner, and kept across restarts.
    const tokenFile = join(dir, "admin-token")
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600)
    expect(statSync(join(dir, "control-plane.db")).mode & 0o777).toBe(0o600)
    const first = readFileSync(tokenFile, "utf8")
    const again = await startMeshOne()
    await again.stop()
    expect(readFileSync(tokenFile, "utf8")).toBe(first)
  })
})

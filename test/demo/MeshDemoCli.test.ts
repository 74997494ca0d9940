/**
 * `mesh-demo` as a program: each subcommand serves its demo on the port asked for and says where; a taken port is one
 * line naming the flag, exit 2. (docs/production.md's test runs both behind real nodes.)
 */
import { spawn } from "node:child_process"
import { createServer, type Server } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { nodeArgs, runBin } from "../support/processes.js"

const occupy = () =>
  new Promise<Server>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => resolve(server))
  })
const portOf = (server: Server) => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}

describe("mesh-demo", () => {
  it("refuses a taken port in one line naming --port", async () => {
    const taken = await occupy()
    try {
      const port = portOf(taken)
      for (const sub of ["mcp", "model"]) {
        const result = await runBin("mesh-demo", [sub, "--port", String(port)])
        expect(result.status, result.stderr).toBe(2)
        expect(result.stderr).toBe(`mesh-demo: port ${port} is in use: choose another with --port\n`)
      }
    } finally {
      taken.close()
    }
  })

  it("mesh-demo model serves the demo model where it says, until stopped", { timeout: 60_000 }, async () => {
    const child = spawn(process.execPath, nodeArgs("mesh-demo", ["model", "--port", "0"]), {
      stdio: ["ignore", "pipe", "pipe"],
    })
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = ""
        child.stdout.on("data", (c: Buffer) => {
          out += c.toString()
          const m = /at (http:\/\/127\.0\.0\.1:\d+\/v1) /.exec(out)
          if (m !== null) resolve(m[1] as string)
        })
        child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)))
      })
      const models = (await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> }
      expect(models.data.map((m) => m.id)).toEqual(["mesh-demo"])
    } finally {
      child.kill("SIGINT")
    }
  })
})

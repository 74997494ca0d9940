/**
 * DNS rebinding (issue 29, item 8): a web page whose name the attacker points at 127.0.0.1 reaches the local API
 * with its own `Host` and `Origin`. The node answers only to loopback names, its bind host and `--allowed-hosts`,
 * refuses a foreign `Origin`, and says so in one stable 403 body.
 */
import { request } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import { socketFetch } from "../../src/testing/SocketFetch.js"

/** A request over TCP with exactly these headers (fetch would write its own Host). */
const raw = (node: NodeHarness.NodeHarness, path: string, headers: Record<string, string>) =>
  Effect.async<{ status: number; body: string }>((resume) => {
    const url = new URL(node.url)
    const req = request({ hostname: url.hostname, port: url.port, path, headers }, (res) => {
      let body = ""
      res.on("data", (chunk) => {
        body += chunk
      })
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    req.end()
  })

const HOST_REFUSED = {
  error: "forbidden",
  message: "the Host header names no address of this node: add it with --allowed-hosts",
}
const ORIGIN_REFUSED = {
  error: "forbidden",
  message: "requests from this Origin are refused: add its host with --allowed-hosts",
}

describe("the local API against DNS rebinding", () => {
  it.scoped("refuses a foreign Host or Origin on TCP with 403; loopback, the socket and probes are served", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ autoApproveEnrollment: true })
      const node = yield* NodeHarness.make(cp, { enroll: false })
      const token = { "x-mesh-authentication": `Bearer ${node.apiToken}` }
      const port = new URL(node.url).port

      const evil = yield* raw(node, "/debug/mesh-info", { ...token, host: `evil.example.com:${port}` })
      expect(evil.status).toBe(403)
      expect(JSON.parse(evil.body)).toEqual(HOST_REFUSED)
      const foreign = yield* raw(node, "/debug/mesh-info", {
        ...token,
        host: `127.0.0.1:${port}`,
        origin: "http://evil.example.com",
      })
      expect(foreign.status).toBe(403)
      expect(JSON.parse(foreign.body)).toEqual(ORIGIN_REFUSED)
      const nullOrigin = yield* raw(node, "/debug/mesh-info", { ...token, host: `localhost:${port}`, origin: "null" })
      expect(nullOrigin.status).toBe(403)
      // Before the token: a rebinding page learns nothing, not even whether a token would do.
      expect((yield* raw(node, "/mcp", { host: "evil.example.com" })).status).toBe(403)
      const openAi = yield* raw(node, "/v1/models", { ...token, host: "evil.example.com" })
      expect(openAi.status).toBe(403)
      expect((JSON.parse(openAi.body) as { error: { message: string } }).error.message).toBe(HOST_REFUSED.message)

      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "LOCALHOST"]) {
        expect([host, (yield* raw(node, "/debug/mesh-info", { ...token, host })).status]).toEqual([host, 200])
      }
      const sameOrigin = yield* raw(node, "/debug/mesh-info", {
        ...token,
        host: `localhost:${port}`,
        origin: `http://localhost:${port}`,
      })
      expect(sameOrigin.status).toBe(200)
      // Probes name the node however their platform does (a pod's address).
      expect((yield* raw(node, "/healthz", { host: "10.1.2.3:8080" })).status).toBe(200)
      // A page cannot reach the socket: it is served whatever Host its client writes.
      const overSocket = yield* Effect.promise(() =>
        socketFetch(node.socketPath)("http://evil.example.com/debug/mesh-info", {
          headers: { origin: "http://evil.example.com" },
        }),
      )
      expect(overSocket.status).toBe(200)
    }),
  )

  it.scoped("names given by --allowed-hosts are served, in Host and in Origin", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ autoApproveEnrollment: true })
      const node = yield* NodeHarness.make(cp, { enroll: false, overrides: { allowedHosts: ["mesh.internal"] } })
      const token = { "x-mesh-authentication": `Bearer ${node.apiToken}` }
      const allowed = yield* raw(node, "/debug/mesh-info", {
        ...token,
        host: "mesh.internal:8080",
        origin: "https://mesh.internal",
      })
      expect(allowed.status).toBe(200)
      expect((yield* raw(node, "/debug/mesh-info", { ...token, host: "other.internal" })).status).toBe(403)
    }),
  )
})

/**
 * The API token as `Authorization: Bearer`, as OpenAI-style SDKs and MCP clients configured with a bearer send it,
 * on the routes that never forward: `/mcp`, discovery, and identity evidence (which TCP never gets, token or not).
 */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { mcpInitialize, tcp } from "./support.js"

const WRONG = "mesh-api-0000000000000000000000000000"

describe("the API token as Authorization: Bearer", () => {
  it.live("is accepted on /mcp and discover, a wrong one is 403, none 401; identity stays socket or mTLS only", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        const router = yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

        // A stock MCP client whose only credential is the bearer.
        const client = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "bearer-agent", version: "1.0.0" })
            await client.connect(
              new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), {
                requestInit: { headers: bearer(node.apiToken) },
              }),
            )
            return client
          }),
          (client) => Effect.promise(() => client.close()),
        )
        expect(client.getServerVersion()?.name).toBe("mesh-node")
        expect((yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)).toContain("get_mesh_info")

        const mcp = (headers: Record<string, string>) =>
          tcp(node, "/mcp", {
            method: "POST",
            headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
            body: JSON.stringify(mcpInitialize),
          })
        const wrongMcp = yield* mcp(bearer(WRONG))
        expect(wrongMcp.status).toBe(403)
        expect(wrongMcp.json).toEqual({ error: "forbidden", message: "wrong API token" })
        expect((yield* mcp({})).status).toBe(401)

        const discover = (headers: Record<string, string>) =>
          tcp(node, "/mesh/service/discover?type=mcp&timeout=1s", { headers })
        const found = yield* discover(bearer(node.apiToken))
        expect(found.status).toBe(200)
        expect(found.json).toEqual([])
        const wrongDiscover = yield* discover(bearer(WRONG))
        expect(wrongDiscover.status).toBe(403)
        expect(wrongDiscover.json).toEqual({ error: "forbidden", message: "wrong API token" })
        expect((yield* discover({})).status).toBe(401)

        for (const path of ["/mesh/identity", `/mesh/peer/${router.peerId}/evidence`]) {
          const refused = yield* tcp(node, path, { headers: bearer(node.apiToken) })
          expect([path, refused.status]).toEqual([path, 403])
          expect((refused.json as { error: string }).error).toBe("strong_transport_required")
        }
      }),
    ),
  )
})

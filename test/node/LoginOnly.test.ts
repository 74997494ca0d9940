import { resolve } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { NODE_ROLE } from "../../src/domain/Policy.js"
import * as ControlPlaneClientLive from "../../src/layers/member/ControlPlaneClientLive.js"
import * as MembershipLive from "../../src/layers/member/MembershipLive.js"
import { Membership } from "../../src/services/member/Membership.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { socketFetch } from "../../src/testing/SocketFetch.js"
import { eventually, socket, tcp, tokenHeader } from "./support.js"

/** The stock MCP client over the node's socket, for the life of the scope. */
const mcpClient = (node: NodeHarness.NodeHarness) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "test-agent", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL("http://node/mcp"), { fetch: socketFetch(node.socketPath) }),
      )
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

/** What `mesh-node join` does: enroll with a token and store the identity in the node's data folder. */
const join = (cp: Harness.ControlPlaneHarness, dataDir: string, token: string) =>
  Effect.scoped(
    Layer.build(
      MembershipLive.layer({
        role: NODE_ROLE,
        labels: {},
        bootstrapToken: Option.some(Redacted.make(token)),
        idToken: Option.none(),
        dataDir: Option.some(dataDir),
        syncInterval: Duration.minutes(5),
      }).pipe(Layer.provide(ControlPlaneClientLive.layer(cp.url))),
    ).pipe(Effect.map((context) => Context.get(context, Membership))),
  )

describe("a node without an identity", () => {
  it.live(
    "serves only the login instructions, then the full MCP server once `join` stored an identity, without a restart",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          yield* RouterHarness.make(cp)
          const node = yield* NodeHarness.make(cp, { enroll: false })
          yield* eventually(10, node.lifecycle.phase, (p) => p._tag === "LoginRequired")

          const login = yield* mcpClient(node)
          expect(login.getServerVersion()?.name).toBe("mesh-node-login")
          // The running node's own folder and control plane: `join` run without them enrolls somewhere else.
          expect(login.getInstructions()).toContain(
            `mesh-node join --control-plane ${cp.url} --data-dir ${resolve(node.dataDir)} --bootstrap-token-path <file>`,
          )
          const tools = yield* Effect.promise(() => login.listTools())
          expect(tools.tools.map((t) => t.name)).toEqual(["get_login_instructions"])
          const told = yield* Effect.promise(() => login.callTool({ name: "get_login_instructions", arguments: {} }))
          expect(JSON.stringify(told.content)).toContain(`mesh-node join --control-plane ${cp.url}`)
          const prompts = yield* Effect.promise(() => login.listPrompts())
          expect(prompts.prompts.map((p) => p.name)).toEqual(["help_user_login"])
          const prompt = yield* Effect.promise(() => login.getPrompt({ name: "help_user_login" }))
          expect(JSON.stringify(prompt.messages)).toContain("mesh-node join")

          // Everything else waits for a login; the diagnostics say why.
          const identity = yield* socket(node, "/mesh/identity")
          expect(identity.status).toBe(503)
          expect((identity.json as { message: string }).message).toContain("mesh-node join")
          const debug = yield* tcp(node, "/debug/mesh-info")
          expect(debug.status).toBe(200)
          expect((debug.json as { phase: string }).phase).toBe("login_required")

          const token = yield* NodeHarness.nodeToken(cp)
          const member = yield* join(cp, node.dataDir, token)
          expect(yield* node.peerId).toBe(member.peerId)
          yield* node.connected
          const full = yield* mcpClient(node)
          expect(full.getServerVersion()?.name).toBe("mesh-node")
          const info = yield* Effect.promise(() => full.callTool({ name: "get_mesh_info", arguments: {} }))
          expect(info.structuredContent).toMatchObject({ peer_id: member.peerId, local_api_socket: node.socketPath })
        }),
      ),
  )

  it.live("the older SSE transport is refused with 400 and a pointer to Streamable HTTP", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        for (const [method, path] of [
          ["GET", "/mcp"],
          ["GET", "/"],
          ["GET", "/sse"],
          ["POST", "/messages"],
        ] as const) {
          const answer = yield* tcp(node, path, {
            method,
            headers: { ...tokenHeader(node), accept: "text/event-stream" },
            ...(method === "POST" ? { body: "{}" } : {}),
          })
          expect(answer.status, `${method} ${path}`).toBe(400)
          expect((answer.json as { message: string }).message).toContain("Streamable HTTP")
        }
      }),
    ),
  )
})

/**
 * The front takes exactly the requests the middleware would hand to their route unchanged, and leaves every other
 * one to the platform: a real node:http server (Listener.makeServer) whose `request` listener stands in for the
 * platform, the front installed ahead of it with fast answers that echo what they were given.
 */
import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted, Ref } from "effect"
import * as NodeConfig from "../../src/config/NodeConfig.js"
import * as Listener from "../../src/http/Listener.js"
import * as ApiTokenLive from "../../src/layers/node/ApiTokenLive.js"
import type { Fast } from "../../src/node/FastAnswer.js"
import * as Front from "../../src/node/Front.js"
import type { ListenerInfo } from "../../src/node/Listener.js"
import * as McpRoutes from "../../src/node/mcp/McpRoutes.js"
import type { RequestMetrics } from "../../src/node/RequestMetrics.js"
import { AgentLog } from "../../src/services/agents/AgentLog.js"
import { ApiToken } from "../../src/services/node/ApiToken.js"
import { type MemberServices, NodeLifecycle, type Phase } from "../../src/services/node/NodeLifecycle.js"

const TOKEN = "front-test-token-0123456789"

/** A fast answer that echoes the headers it was handed; `/v1/completions` declines, as a route refusing would. */
const fast: Record<string, Fast> = {
  mesh_proxy: ({ res, headers, match }) =>
    Effect.sync(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ by: "front", headers, rest: match.rest }))
    }),
  v1_chat_completions: ({ res, headers }) =>
    Effect.sync(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ by: "front", headers }))
    }),
  v1_completions: () => undefined,
  healthz: ({ res }) => Effect.sync(() => res.end(JSON.stringify({ by: "front" }))),
  // The real one: it must leave the legacy transport's routes (label `mcp` too) to the route's refusal.
  mcp: McpRoutes.fast,
}

interface Answer {
  readonly by: string
  readonly headers?: Record<string, string>
}

const serve = (listener: ListenerInfo, lifecycle: { member: boolean; connected: boolean }, tracing = false) =>
  Effect.gen(function* () {
    const recorded = yield* Ref.make<ReadonlyArray<string>>([])
    const metrics: RequestMetrics = {
      enter: Effect.void,
      leave: Effect.void,
      record: (route, code) => Effect.runSync(Ref.update(recorded, (all) => [...all, `${route} ${code}`])),
    }
    const phase: Phase = lifecycle.member
      ? { _tag: "Member", peerId: "self", context: Context.empty() as Context.Context<MemberServices> }
      : { _tag: "Starting", step: "joining", lastError: Option.none() }
    // As in a node without an OTLP endpoint: while tracing is on, the middleware makes the spans and the front stands by.
    const front = yield* Front.make(listener, metrics, fast).pipe(
      Effect.withTracerEnabled(tracing),
      Effect.provide(
        Layer.mergeAll(
          Layer.succeed(
            NodeConfig.NodeConfig,
            NodeConfig.make({
              dataDir: "unused",
              apiToken: Redacted.make(TOKEN),
              bindAddress: Option.some({ host: "127.0.0.1", port: 0 }),
            }),
          ),
          Layer.succeed(ApiToken, ApiTokenLive.make(Redacted.make(TOKEN))),
          Layer.succeed(
            NodeLifecycle,
            NodeLifecycle.of({
              phase: Effect.succeed(phase),
              connected: Effect.succeed(lifecycle.connected),
              nextChange: Effect.never,
            } as unknown as NodeLifecycle["Type"]),
          ),
          Layer.succeed(AgentLog, {} as AgentLog["Type"]),
        ),
      ),
    )
    const server: Server = yield* Effect.acquireRelease(
      Effect.async<Server>((resume) => {
        const server = Listener.makeServer(Listener.defaults)
        server.on("request", (_req, res) => res.end(JSON.stringify({ by: "platform" })))
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void))),
    )
    yield* Listener.withFront(server, front)
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const ask = (path: string, headers: Record<string, string> = {}, method = "GET") =>
      Effect.promise(async () => {
        const response = await fetch(`${base}${path}`, { method, headers })
        return (await response.json()) as Answer
      })
    return { ask, recorded: Ref.get(recorded) }
  })

const tcp: ListenerInfo = { kind: "tcp", verifiedClient: false }
const socket: ListenerInfo = { kind: "socket", verifiedClient: false }
const own = { "x-mesh-authentication": `Bearer ${TOKEN}` }
const PROXY = "/mesh/peer-1/http/web/some/path"
const COMPLETION = "/v1/chat/completions"

describe("the local API's front", () => {
  it.scoped("takes a plain request with the API token, and passes it on without the token", () =>
    Effect.gen(function* () {
      const { ask, recorded } = yield* serve(tcp, { member: true, connected: true })
      const proxied = yield* ask(PROXY, { ...own, authorization: "Bearer the-services-own" })
      expect(proxied.by).toBe("front")
      expect(proxied.headers?.["x-mesh-authentication"]).toBeUndefined()
      // On a forwarding route `Authorization` belongs to the service called.
      expect(proxied.headers?.authorization).toBe("Bearer the-services-own")
      // On `/v1`, `Authorization` may carry the API token (OpenAI's SDKs send it there); it is not passed on.
      const completion = yield* ask(COMPLETION, { authorization: `Bearer ${TOKEN}` }, "POST")
      expect(completion.by).toBe("front")
      expect(completion.headers?.authorization).toBeUndefined()
      // Counted as the middleware counts.
      expect(yield* recorded).toEqual(["mesh_proxy 200", "v1_chat_completions 200"])
    }),
  )

  it.scoped("leaves to the platform every request the middleware must decide", () =>
    Effect.gen(function* () {
      const { ask, recorded } = yield* serve(tcp, { member: true, connected: true })
      const platform = (path: string, headers: Record<string, string> = {}, method = "GET") =>
        Effect.map(ask(path, headers, method), (answer) => answer.by)
      // No token, a wrong one, a malformed one.
      expect(yield* platform(PROXY)).toBe("platform")
      expect(yield* platform(PROXY, { "x-mesh-authentication": "Bearer wrong-token" })).toBe("platform")
      expect(yield* platform(PROXY, { "x-mesh-authentication": TOKEN })).toBe("platform")
      // The API token in `Authorization` is no credential on a forwarding route.
      expect(yield* platform(PROXY, { authorization: `Bearer ${TOKEN}` })).toBe("platform")
      // An agent's token: its scope is the route's to apply.
      expect(yield* platform(PROXY, { "x-mesh-authentication": `Bearer ${"a".repeat(300)}` })).toBe("platform")
      expect(yield* platform(COMPLETION, { authorization: `Bearer ${"a".repeat(300)}` }, "POST")).toBe("platform")
      // A page under another name (DNS rebinding).
      expect(yield* platform(PROXY, { ...own, origin: "http://evil.example" })).toBe("platform")
      // A route without a fast answer, one whose fast answer declines, an open route, a wrong method.
      expect(yield* platform("/mesh/service/discover?type=mcp", own)).toBe("platform")
      expect(yield* platform("/v1/completions", own, "POST")).toBe("platform")
      expect(yield* platform("/healthz")).toBe("platform")
      expect(yield* platform(COMPLETION, own, "GET")).toBe("platform")
      // The HTTP+SSE transport, which `/mcp` refuses with a pointer to Streamable HTTP.
      expect(yield* platform("/sse", own)).toBe("platform")
      expect(yield* platform("/messages", own, "POST")).toBe("platform")
      expect(yield* platform("/mcp", own)).toBe("platform")
      expect(yield* recorded).toEqual([])
    }),
  )

  it.scoped("leaves requests to the platform while the node is not a member connected to the mesh", () =>
    Effect.gen(function* () {
      const starting = yield* serve(tcp, { member: false, connected: false })
      expect((yield* starting.ask(PROXY, own)).by).toBe("platform")
      const unconnected = yield* serve(tcp, { member: true, connected: false })
      expect((yield* unconnected.ask(PROXY, own)).by).toBe("platform")
    }),
  )

  it.scoped("stands by while tracing is on: the middleware makes each request's span", () =>
    Effect.gen(function* () {
      const { ask } = yield* serve(tcp, { member: true, connected: true }, true)
      expect((yield* ask(PROXY, own)).by).toBe("platform")
    }),
  )

  it.scoped("on the Unix socket, needs no token: opening it is the credential", () =>
    Effect.gen(function* () {
      const { ask } = yield* serve(socket, { member: true, connected: true })
      expect((yield* ask(PROXY)).by).toBe("front")
      // Host and Origin are not a browser's there.
      expect((yield* ask(PROXY, { origin: "http://evil.example" })).by).toBe("front")
      const completion = yield* ask(COMPLETION, { authorization: "Bearer sk-the-clients-own" }, "POST")
      expect(completion.by).toBe("front")
      // A token that is not ours is the client's own business there, and passed on.
      expect(completion.headers?.authorization).toBe("Bearer sk-the-clients-own")
      // An agent's token scopes the agent wherever it calls: the route applies the scope.
      const agent = `Bearer ${"a".repeat(300)}`
      expect((yield* ask(PROXY, { "x-mesh-authentication": agent })).by).toBe("platform")
      expect((yield* ask(COMPLETION, { authorization: agent }, "POST")).by).toBe("platform")
    }),
  )
})

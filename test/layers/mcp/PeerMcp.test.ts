/**
 * PeerMcp's sessions with peers' MCP services, against real MCP SDK servers (the stateful test backend), each reached
 * through a stand-in for the proxy path that tells the backend who calls: the peer, and the agent whose token came
 * along. Every request that crosses it is recorded, as the serving peer would see it.
 */

import { describe, expect, it } from "@effect/vitest"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Context, Deferred, Duration, Effect, Exit, Layer, Redacted, Ref, Scope, TestClock } from "effect"
import type * as AgentScope from "../../../src/domain/AgentScope.js"
import { BadGateway } from "../../../src/domain/Errors.js"
import * as McpOpen from "../../../src/domain/McpOpen.js"
import * as PeerMcpLive from "../../../src/layers/mcp/PeerMcpLive.js"
import { type Agent, CurrentAgent, TOKEN_HEADER } from "../../../src/services/agents/CurrentAgent.js"
import { PeerMcp, type RemoteResult } from "../../../src/services/mcp/PeerMcp.js"
import { PeerProxy } from "../../../src/services/proxy/PeerProxy.js"
import * as Backends from "../../support/backends.js"

interface Seen {
  readonly service: string
  readonly method: string
  /** The JSON-RPC method of a POST. */
  readonly rpc?: string
  readonly session?: string
  /** The request asked the serving node to open its session. */
  readonly opening?: true
}

/**
 * Whether the serving node opens a session a request asks it to (domain/McpOpen), or answers as one that does not
 * (400, nothing run: a node of an older version, a stdio service).
 */
type Serving = "opens" | "ordinary"

/** Agents by token, as the serving peer would verify them. */
const agentOf = (name: string, token: string): Agent => ({
  scope: { agent: name, expiresAtMs: 0 } as AgentScope.Scope,
  token: Redacted.make(token),
})

/**
 * How the path fails a tool call: the stream refused before it went out; the answer lost after the backend had it;
 * or the serving node answers the status itself.
 */
type Fault = "refused" | "lost" | "backend down" | 502 | 503 | 504

/** The proxy path to the backend of each service: the caller as `X-Mesh-Peer-Id`, with the agent's token if any. */
const proxyTo = (
  backends: Ref.Ref<ReadonlyMap<string, string>>,
  seen: Ref.Ref<ReadonlyArray<Seen>>,
  /** Initialized notifications wait for this before they go on (true), or are answered 500 without reaching it. */
  announce: Deferred.Deferred<boolean>,
  faults: Ref.Ref<Fault | undefined>,
  serving: Serving,
) =>
  PeerProxy.of({
    forward: () => Effect.dieMessage("not used"),
    fetch: (peerId, _type, name, _path, init = {}) =>
      Effect.gen(function* () {
        const { agent, requiredLabels: _labels, onTooLarge: _cap, openMcpSession, ...rest } = init
        const headers = new Headers(rest.headers)
        const body = typeof rest.body === "string" ? rest.body : undefined
        if (openMcpSession !== undefined && serving === "ordinary") {
          const refusal = { jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no session" }, id: null }
          return new Response(JSON.stringify(refusal), { status: 400, headers: { "content-type": "application/json" } })
        }
        yield* Ref.update(seen, (all) => [
          ...all,
          {
            service: name,
            method: rest.method ?? "GET",
            ...(body === undefined ? {} : { rpc: (JSON.parse(body) as { method?: string }).method ?? "" }),
            ...(headers.get("mcp-session-id") === null ? {} : { session: headers.get("mcp-session-id") ?? "" }),
            ...(openMcpSession === undefined ? {} : { opening: true as const }),
          },
        ])
        if (body?.includes('"notifications/initialized"') === true && !(yield* Deferred.await(announce))) {
          return new Response("the stand-in refused it", { status: 500 })
        }
        const fault = body?.includes('"tools/call"') === true ? yield* Ref.get(faults) : undefined
        if (fault === "refused") return yield* new BadGateway({ message: "peer peer-b is unreachable: stream refused" })
        if (typeof fault === "number") return new Response("the serving node's own answer", { status: fault })
        if (fault === "backend down") {
          const error = { error: "backend_unreachable", message: "the mcp service tools did not answer: ECONNREFUSED" }
          return new Response(JSON.stringify(error), { status: 502, headers: { "content-type": "application/json" } })
        }
        const principal = agent === undefined ? peerId : `${peerId}/${Redacted.value(agent.token)}`
        headers.set("x-mesh-peer-id", principal)
        if (agent !== undefined) headers.set(TOKEN_HEADER, Redacted.value(agent.token))
        const url = (yield* Ref.get(backends)).get(name) ?? ""
        if (openMcpSession !== undefined) {
          // As the serving node does: the initialize and its notification, then the request in the new session.
          const opened = yield* Effect.promise(() => openAt(`${url}/mcp`, headers, openMcpSession))
          headers.set("mcp-session-id", opened.sessionId)
          headers.set("mcp-protocol-version", opened.version)
          const answer = yield* Effect.promise(() => fetch(`${url}/mcp`, { ...rest, headers }))
          const out = new Headers(answer.headers)
          out.set(McpOpen.OPENED, opened.version)
          return new Response(answer.body, { status: answer.status, headers: out })
        }
        const answer = yield* Effect.promise(() => fetch(`${url}/mcp`, { ...rest, headers }))
        if (fault !== "lost") return answer
        yield* Effect.promise(() => answer.arrayBuffer())
        return yield* new BadGateway({ message: "peer peer-b did not answer: stream reset", delivered: true })
      }),
  })

/** A session opened with the backend for the caller whose headers these are. */
const openAt = async (url: string, caller: Headers, version: string) => {
  const headers = new Headers(caller)
  headers.set("content-type", "application/json")
  headers.set("accept", "application/json, text/event-stream")
  const initialized = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify(McpOpen.initialize(version, "test")),
  })
  const text = await initialized.text()
  const agreed = McpOpen.agreedVersion(initialized.headers.get("content-type") ?? "", text)
  const sessionId = initialized.headers.get("mcp-session-id")
  if (agreed === undefined || sessionId === null) throw new Error(`no session opened: ${text}`)
  headers.set("mcp-session-id", sessionId)
  headers.set("mcp-protocol-version", agreed)
  const notified = await fetch(url, { method: "POST", headers, body: JSON.stringify(McpOpen.INITIALIZED) })
  await notified.arrayBuffer()
  return { sessionId, version: agreed }
}

/**
 * A backend whose `wait` tool runs until the caller gives up, reporting progress each time the test pokes it; what it
 * heard of the caller giving up is kept.
 */
const waiting = Effect.gen(function* () {
  const started = yield* Deferred.make<void>()
  const poked: Array<() => void> = []
  const cancelled: Array<string> = []
  const tools = () => {
    const mcp = new McpServer({ name: "waiting", version: "1.0.0" })
    mcp.registerTool("wait", {}, async (extra) => {
      await Effect.runPromise(Deferred.succeed(started, undefined))
      const token = extra._meta?.progressToken
      for (let step = 1; !extra.signal.aborted; step++) {
        await new Promise<void>((resolve) => {
          poked.push(resolve)
          extra.signal.addEventListener("abort", () => resolve(), { once: true })
        })
        if (token !== undefined && !extra.signal.aborted) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: step },
          })
        }
      }
      cancelled.push(String(extra.signal.reason))
      return { content: [] }
    })
    return mcp
  }
  const backend = yield* Backends.sessions(tools)
  return {
    backend,
    started: Deferred.await(started),
    poke: Effect.sync(() => poked.splice(0).forEach((resolve) => resolve())),
    cancelled: Effect.sync(() => [...cancelled]),
  }
})

const DEFAULTS: PeerMcpLive.Limits = { maxSessions: PeerMcpLive.MAX_SESSIONS, idle: PeerMcpLive.IDLE }

const setup = (limits = DEFAULTS, initialized: "pass" | "hold" | "refuse" = "pass", serving: Serving = "ordinary") =>
  Effect.gen(function* () {
    const backends = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
    const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
    const announce = yield* Deferred.make<boolean>()
    const faults = yield* Ref.make<Fault | undefined>(undefined)
    if (initialized !== "hold") yield* Deferred.succeed(announce, initialized === "pass")
    const context = yield* Layer.build(
      PeerMcpLive.layerWith(limits).pipe(
        Layer.provide(Layer.succeed(PeerProxy, proxyTo(backends, seen, announce, faults, serving))),
      ),
    )
    const peerMcp = Context.get(context, PeerMcp)
    const serve = (service: string, backend: Backends.Backend) =>
      Ref.update(backends, (map) => new Map(map).set(service, backend.url))
    return {
      peerMcp,
      serve,
      seen: Ref.get(seen),
      announce: Deferred.succeed(announce, true),
      fail: (fault: Fault | undefined) => Ref.set(faults, fault),
    }
  })

const textOf = (result: RemoteResult) =>
  "content" in result ? result.content.map((c) => (c.type === "text" ? c.text : "")).join("") : ""

const echo = (peerMcp: PeerMcp["Type"], service: string, text: string) =>
  Effect.map(peerMcp.callTool("peer-b", service, "echo", { text }), textOf)

/** A moment of real time, for work the layer left running on node's event loop (a session's DELETE, say). */
const until = <A>(check: Effect.Effect<A>, done: (a: A) => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      const value = yield* check
      if (done(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* check
  })

describe("PeerMcp", () => {
  it.scoped("a first call opens its session at the serving node: one request, no initialize of its own", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, seen } = yield* setup(DEFAULTS, "pass", "opens")
      yield* serve("tools", backend)
      expect(yield* echo(peerMcp, "tools", "one")).toBe("one")
      expect(yield* echo(peerMcp, "tools", "two")).toBe("two")
      expect(backend.sessionsBy("peer-b")).toBe(1)
      const requests = yield* seen
      expect(requests.map((r) => [r.rpc ?? r.method, r.opening === true, r.session !== undefined])).toEqual([
        ["tools/call", true, false],
        ["tools/call", false, true],
      ])
    }),
  )

  it.scoped("first calls made together wait for the one that opens the session, and share it", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, seen } = yield* setup(DEFAULTS, "pass", "opens")
      yield* serve("tools", backend)
      const texts = ["a", "b", "c", "d"]
      const answers = yield* Effect.forEach(texts, (text) => echo(peerMcp, "tools", text), { concurrency: "unbounded" })
      expect(answers).toEqual(texts)
      expect(backend.sessionsBy("peer-b")).toBe(1)
      expect((yield* seen).filter((r) => r.opening === true)).toHaveLength(1)
    }),
  )

  it.scoped("calls after the first go over the session it opened: one initialize, and no GET stream", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, seen } = yield* setup()
      yield* serve("tools", backend)
      expect(yield* echo(peerMcp, "tools", "one")).toBe("one")
      expect(yield* echo(peerMcp, "tools", "two")).toBe("two")
      expect(backend.sessionsBy("peer-b")).toBe(1)
      expect(yield* peerMcp.sessions).toBe(1)
      // The initialized notification is sent, but what it costs the first call is not waited for; nothing listens for
      // messages the server sends unasked, so no GET stream is held open at the peer.
      const requests = yield* until(seen, (all) => all.length >= 4)
      expect(requests.map((r) => r.rpc ?? r.method).sort()).toEqual(
        ["initialize", "notifications/initialized", "tools/call", "tools/call"].sort(),
      )
    }),
  )

  it.live("a new session's first call does not wait for the answer to its initialized notification", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, announce, seen } = yield* setup(DEFAULTS, "hold")
      yield* serve("tools", backend)
      // The notification is held on its way until the call has been answered.
      const answer = yield* echo(peerMcp, "tools", "first").pipe(
        Effect.timeoutFail({ duration: Duration.seconds(10), onTimeout: () => "the call waited for the notification" }),
      )
      expect(answer).toBe("first")
      yield* announce
      expect((yield* until(seen, (all) => all.length >= 3)).map((r) => r.rpc)).toContain("notifications/initialized")
    }).pipe(Effect.scoped),
  )

  it.scoped("a session whose initialized notification failed is retired: the next call opens another", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, seen } = yield* setup(DEFAULTS, "refuse")
      yield* serve("tools", backend)
      expect(yield* echo(peerMcp, "tools", "first")).toBe("first")
      // Retired once the notification's 500 came back.
      yield* until(peerMcp.sessions, (n) => n === 0)
      expect(yield* echo(peerMcp, "tools", "second")).toBe("second")
      expect(backend.sessionsBy("peer-b")).toBe(2)
      // The retired session is ended once a call on it could no longer be under way.
      const retired = (yield* seen).find((r) => r.rpc === "tools/call")?.session
      const ended = (all: ReadonlyArray<Seen>) => all.some((r) => r.method === "DELETE" && r.session === retired)
      expect(ended(yield* seen)).toBe(false)
      yield* TestClock.adjust(Duration.minutes(11))
      expect(ended(yield* until(seen, ended))).toBe(true)
    }),
  )

  it.scoped("a tool call that failed after it went out is not called unreachable, which callers retry", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, fail } = yield* setup()
      yield* serve("tools", backend)
      expect(yield* echo(peerMcp, "tools", "open")).toBe("open")
      const reason = (fault: Fault) =>
        fail(fault).pipe(
          Effect.zipRight(Effect.flip(echo(peerMcp, "tools", String(fault)))),
          Effect.map((error) => [fault, error.reason, error.message.includes("may have run")] as const),
        )
      // Sent and lost, or answered by the serving node after its backend had it: it may have run.
      expect(yield* reason("lost")).toEqual(["lost", "failed", true])
      expect(yield* reason(502)).toEqual([502, "failed", true])
      expect(yield* reason(504)).toEqual([504, "failed", true])
      // Turned away before it reached anything: safe to make again.
      expect(yield* reason("refused")).toEqual(["refused", "unreachable", false])
      expect(yield* reason(503)).toEqual([503, "unreachable", false])
      expect(yield* reason("backend down")).toEqual(["backend down", "unreachable", false])
      yield* fail(undefined)
      expect(yield* echo(peerMcp, "tools", "after")).toBe("after")
    }),
  )

  it.scoped("an agent's calls never ride on the session of another principal", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve } = yield* setup()
      yield* serve("tools", backend)
      const ide = agentOf("ide", "token-ide")
      const ci = agentOf("ci", "token-ci")
      yield* echo(peerMcp, "tools", "node")
      yield* echo(peerMcp, "tools", "ide").pipe(Effect.provideService(CurrentAgent, ide))
      yield* echo(peerMcp, "tools", "ci").pipe(Effect.provideService(CurrentAgent, ci))
      yield* echo(peerMcp, "tools", "ide again").pipe(Effect.provideService(CurrentAgent, ide))
      yield* echo(peerMcp, "tools", "node again")
      // Each principal opened one session, with its own credential, and kept it.
      expect(backend.sessionsBy("peer-b")).toBe(1)
      expect(backend.sessionsBy("peer-b/token-ide")).toBe(1)
      expect(backend.sessionsBy("peer-b/token-ci")).toBe(1)
      expect(yield* peerMcp.sessions).toBe(3)
    }),
  )

  it.scoped("a session the backend forgot (it restarted) is opened again, and the call goes through", () =>
    Effect.gen(function* () {
      const first = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
      const backend = yield* Backends.statefulMcp().pipe(Scope.extend(first))
      const { peerMcp, serve } = yield* setup()
      yield* serve("tools", backend)
      expect(yield* echo(peerMcp, "tools", "before")).toBe("before")
      yield* Scope.close(first, Exit.void)
      // The stand-in's client sees the old server's connections closed before it sends again.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      const restarted = yield* Backends.statefulMcp(backend.port)
      expect(yield* echo(peerMcp, "tools", "after")).toBe("after")
      expect(restarted.sessionsBy("peer-b")).toBe(1)
      expect(yield* peerMcp.sessions).toBe(1)
    }),
  )

  it.scoped("a call is given up after a minute without news, progress counting as news, and the server is told", () =>
    Effect.gen(function* () {
      const server = yield* waiting
      const { peerMcp, serve } = yield* setup()
      yield* serve("slow", server.backend)
      const progress: Array<number> = []
      const call = yield* Effect.fork(peerMcp.callTool("peer-b", "slow", "wait", {}, (p) => progress.push(p.progress)))
      yield* server.started
      // News every 50 s: well past a minute in all, the call goes on.
      for (const step of [1, 2]) {
        yield* TestClock.adjust(Duration.seconds(50))
        yield* server.poke
        yield* until(
          Effect.sync(() => progress.length),
          (n) => n === step,
        )
      }
      expect(call.unsafePoll()).toBeNull()
      // Then a minute of silence.
      yield* TestClock.adjust(Duration.seconds(61))
      const error = yield* Effect.flip(call)
      expect([error.reason, error.message]).toEqual(["failed", "the server did not answer in time"])
      expect(yield* until(server.cancelled, (all) => all.length > 0)).toEqual([
        expect.stringContaining("Request timed out"),
      ])
      expect(progress).toEqual([1, 2])
    }),
  )

  it.scoped("sessions are bounded: the longest unused is ended to make room, and idle ones are ended", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.statefulMcp()
      const { peerMcp, serve, seen } = yield* setup({ maxSessions: 2, idle: Duration.minutes(5) })
      for (const service of ["s1", "s2", "s3"]) yield* serve(service, backend)
      const later = TestClock.adjust(Duration.seconds(1))
      yield* echo(peerMcp, "s1", "1")
      yield* later
      yield* echo(peerMcp, "s2", "2")
      yield* later
      yield* echo(peerMcp, "s1", "1 again")
      yield* later
      yield* echo(peerMcp, "s3", "3")
      expect(yield* peerMcp.sessions).toBe(2)
      // s2's session, the longest unused, was ended at the serving side.
      const ended = yield* until(seen, (all) => all.some((r) => r.method === "DELETE"))
      expect(ended.filter((r) => r.method === "DELETE").map((r) => r.service)).toEqual(["s2"])
      // Unused for longer than `idle`: ended too.
      yield* TestClock.adjust(Duration.minutes(7))
      expect(yield* until(peerMcp.sessions, (n) => n === 0)).toBe(0)
      const all = yield* until(seen, (all) => all.filter((r) => r.method === "DELETE").length === 3)
      expect(
        all
          .filter((r) => r.method === "DELETE")
          .map((r) => r.service)
          .sort(),
      ).toEqual(["s1", "s2", "s3"])
    }),
  )
})

/**
 * The 2025-era half of the node's `/mcp` (protocol 2025-11-25 and older), on the 1.x MCP SDK's Streamable HTTP
 * transport, stateful: `initialize` opens a session (a server and a transport of its own, found again by
 * `Mcp-Session-Id`), DELETE or IDLE_LIMIT of silence closes it. At most MAX_SESSIONS are open; past that the longest
 * idle one is closed to make room. Dropping the 2025 era is deleting this folder.
 */
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Context, Duration, Effect, Option, Ref, Runtime, Schedule, type Scope } from "effect"
import type { z } from "zod"
import pkg from "../../../../package.json" with { type: "json" }
import * as TraceContext from "../../../http/TraceContext.js"
import { type Agent, CurrentAgent } from "../../../services/agents/CurrentAgent.js"
import type { Federation } from "../../../services/federation/Federation.js"
import * as Instructions from "../Instructions.js"
import type * as Tool from "../Tool.js"
import * as LegacyToolHandlers from "./LegacyToolHandlers.js"

const IDLE_LIMIT = Duration.minutes(30)
const MAX_SESSIONS = 256

interface Session {
  readonly server: Server
  readonly transport: StreamableHTTPServerTransport
  readonly lastUsedMs: number
  /** The agent that opened it; undefined for a caller with the node's own token. */
  readonly agent: string | undefined
}

const notFound = (res: ServerResponse, message: string, status: number) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }))
}

/**
 * The SDK hands a tool call the headers of the request that carried it, read from the raw headers: the call's span
 * continues this request's span through them.
 */
const setTraceparent = (req: IncomingMessage, value: string): void => {
  const raw: Array<string> = []
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string
    if (name.toLowerCase() !== "traceparent") raw.push(name, req.rawHeaders[i + 1] as string)
  }
  raw.push("traceparent", value)
  req.rawHeaders = raw
}

export interface LegacySessions {
  /** Serves one request of the 2025 era; a POST's body comes already read and parsed. */
  readonly handle: (
    req: IncomingMessage,
    res: ServerResponse,
    agent: Agent | undefined,
    body?: unknown,
  ) => Effect.Effect<void>
  /** Sessions open. */
  readonly sessions: Effect.Effect<number>
  /** Tells every open session the tool list changed (over its standalone stream, if it opened one). */
  readonly toolsChanged: Effect.Effect<void>
}

export const make = <R>(
  toolRuntime: Runtime.Runtime<R | Federation>,
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
  definitions: ReadonlyArray<McpTool>,
): Effect.Effect<LegacySessions, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const sessions = yield* Ref.make<ReadonlyMap<string, Session>>(new Map())

    const close = (id: string) =>
      Effect.flatMap(
        Ref.modify(sessions, (map) => {
          const next = new Map(map)
          const session = next.get(id)
          next.delete(id)
          return [session, next]
        }),
        (session) =>
          session === undefined ? Effect.void : Effect.promise(() => session.transport.close().catch(() => undefined)),
      )

    const touch = (id: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.update(sessions, (map) => {
          const session = map.get(id)
          return session === undefined ? map : new Map(map).set(id, { ...session, lastUsedMs: now })
        }),
      )

    const open = (agent: Agent | undefined) =>
      Effect.gen(function* () {
        const server = new Server(
          { name: "mesh-node", version: pkg.version },
          { instructions: Instructions.text, capabilities: { tools: { listChanged: true } } },
        )
        // An agent's session runs its tools in the agent's scope: they list and call only what it covers, federated
        // tools included (the caller federation's scope hook sees).
        const scoped =
          agent === undefined
            ? toolRuntime
            : Runtime.make({
                context: Context.add(toolRuntime.context, CurrentAgent, agent),
                runtimeFlags: toolRuntime.runtimeFlags,
                fiberRefs: toolRuntime.fiberRefs,
              })
        LegacyToolHandlers.install(
          server,
          scoped,
          tools,
          definitions,
          agent === undefined ? {} : { scope: agent.scope },
        )
        const run = Runtime.runFork(runtime)
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (id) => {
            run(
              Effect.gen(function* () {
                const now = yield* Clock.currentTimeMillis
                const map = yield* Ref.get(sessions)
                if (map.size >= MAX_SESSIONS) {
                  const idlest = [...map.entries()].sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs)[0]
                  if (idlest !== undefined) yield* close(idlest[0])
                }
                yield* Ref.update(sessions, (m) =>
                  new Map(m).set(id, { server, transport, lastUsedMs: now, agent: agent?.scope.agent }),
                )
              }),
            )
          },
          onsessionclosed: (id) => {
            run(close(id))
          },
        })
        yield* Effect.promise(() => server.connect(transport))
        return transport
      })

    const handle = (req: IncomingMessage, res: ServerResponse, agent: Agent | undefined, body?: unknown) =>
      Effect.gen(function* () {
        yield* TraceContext.current.pipe(Effect.map(Option.map((value) => setTraceparent(req, value))))
        const header = req.headers["mcp-session-id"]
        const id = Array.isArray(header) ? header[0] : header
        if (id === undefined) {
          if (req.method !== "POST") return notFound(res, "Bad Request: no session; send initialize first", 400)
          const transport = yield* open(agent)
          yield* Effect.promise(() => transport.handleRequest(req, res, body))
          // A first request that was not an initialize leaves a transport without a session: drop it.
          if (transport.sessionId === undefined) yield* Effect.promise(() => transport.close())
          return
        }
        const session = (yield* Ref.get(sessions)).get(id)
        // A session is its opener's: another agent (or the node's own token) does not find it.
        if (session === undefined || session.agent !== agent?.scope.agent)
          return notFound(res, "Session not found", 404)
        yield* touch(id)
        yield* Effect.promise(() => session.transport.handleRequest(req, res, body))
      })

    const sweep = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const idle = [...(yield* Ref.get(sessions)).entries()].filter(
        ([, s]) => now - s.lastUsedMs > Duration.toMillis(IDLE_LIMIT),
      )
      yield* Effect.forEach(idle, ([id]) => close(id), { discard: true })
    })
    yield* sweep.pipe(Effect.repeat(Schedule.spaced(Duration.minutes(1))), Effect.forkScoped)
    const toolsChanged = Effect.flatMap(Ref.get(sessions), (map) =>
      Effect.forEach(
        [...map.values()],
        (session) => Effect.promise(() => session.server.sendToolListChanged().catch(() => undefined)),
        { discard: true },
      ),
    )
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Ref.get(sessions), (map) => Effect.forEach([...map.keys()], close, { discard: true })),
    )

    return { handle, sessions: Effect.map(Ref.get(sessions), (map) => map.size), toolsChanged } satisfies LegacySessions
  })

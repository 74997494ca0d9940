/**
 * The stdio MCP servers a node runs, on their own: real processes (the test server in test/support/stdioServer.mjs)
 * behind a real HTTP listener that hands every request to StdioServers as the proxy's serving side does, with the
 * calling peer named by a header. Stock MCP SDK clients on the other end.
 */
import { createServer } from "node:http"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import {
  StreamableHTTPClientTransport,
  type StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect, Layer, Logger, Runtime } from "effect"
import type { ServiceSpec } from "../../src/domain/NodeFile.js"
import * as StdioServersLive from "../../src/layers/mcp/StdioServersLive.js"
import { StdioServers, type StdioServersService } from "../../src/services/mcp/StdioServers.js"
import { eventually } from "../node/support.js"

const SECRET = "a-secret-value-0123456789"
const script = join(import.meta.dirname, "..", "support", "stdioServer.mjs")

const spec = (overrides: Partial<ServiceSpec> = {}): ServiceSpec => ({
  name: "stdio",
  type: "mcp",
  description: "",
  command: [process.execPath, script],
  env: { TEST_SECRET: SECRET, GREETING: "hello" },
  ...overrides,
})

/** StdioServers behind a loopback HTTP listener; `x-test-caller` names the calling peer. Logs are collected. */
const serving = (service: ServiceSpec) =>
  Effect.gen(function* () {
    const logs: Array<string> = []
    const logger = Logger.make(({ message, annotations }) => {
      const text = Array.isArray(message) ? message.join(" ") : String(message)
      logs.push(`${text} ${JSON.stringify(Object.fromEntries(annotations))}`)
    })
    const context = yield* Layer.build(StdioServersLive.layer)
    const stdio = Context.get(context, StdioServers)
    const runtime = yield* Effect.runtime<never>().pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    const server = createServer((req, res) => {
      const caller = String(req.headers["x-test-caller"] ?? "peer-a")
      Runtime.runFork(runtime)(stdio.handle(service, caller, req, res))
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
        })
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        }),
    )
    return { stdio, url: `http://127.0.0.1:${port}/`, logs }
  })

const connect = (url: string, caller = "peer-a") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { "x-test-caller": caller } },
      })
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close()),
  )

const text = (result: Awaited<ReturnType<Client["callTool"]>>) =>
  (result.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? "").join("")

const running = (stdio: StdioServersService) => Effect.map(stdio.running, (map) => map.get("stdio") ?? 0)

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("stdio MCP servers run by a node", () => {
  it.scopedLive("a probe runs the server to list its tools, then stops it", () =>
    Effect.gen(function* () {
      const { stdio } = yield* serving(spec())
      expect(yield* stdio.tools(spec())).toEqual(["crash", "echo", "env", "pid"])
      expect(yield* running(stdio)).toBe(0)
      const broken = yield* Effect.flip(stdio.tools(spec({ name: "broken", command: ["mesh-test-no-such-program"] })))
      expect(broken).toContain("could not be started")
    }),
  )

  it.scopedLive(
    "each session gets a process of its own with a clean environment; another peer cannot use it",
    () =>
      Effect.gen(function* () {
        process.env.MESH_TEST_NODE_ONLY = "the node's own environment"
        const { stdio, url } = yield* serving(spec())
        const a = yield* connect(url)
        const b = yield* connect(url)
        expect(a.client.getServerVersion()?.name).toBe("stdio-test-server")
        expect(yield* running(stdio)).toBe(2)
        const pidA = text(yield* Effect.promise(() => a.client.callTool({ name: "pid", arguments: {} })))
        const pidB = text(yield* Effect.promise(() => b.client.callTool({ name: "pid", arguments: {} })))
        expect(pidA).not.toBe(pidB)

        const echoed = yield* Effect.promise(() => a.client.callTool({ name: "echo", arguments: { text: "hi" } }))
        expect(echoed.structuredContent).toEqual({ text: "hi", pid: Number(pidA) })

        const env = JSON.parse(text(yield* Effect.promise(() => a.client.callTool({ name: "env", arguments: {} }))))
        expect(env.GREETING).toBe("hello")
        expect(env.PATH).toBe(process.env.PATH)
        expect(env.MESH_TEST_NODE_ONLY).toBeUndefined()
        const basics = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
        expect(
          Object.keys(env)
            .filter((k) => !basics.includes(k))
            .sort(),
        ).toEqual(["GREETING", "TEST_SECRET"])

        // Another peer presenting A's session id is told the session does not exist.
        const stolen = yield* Effect.promise(() =>
          fetch(url, {
            method: "POST",
            headers: {
              "x-test-caller": "peer-b",
              "mcp-session-id": a.transport.sessionId ?? "",
              "mcp-protocol-version": "2025-06-18",
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
            },
            body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }),
          }),
        )
        expect(stolen.status).toBe(404)

        // Ending a session stops its process and frees its slot.
        yield* Effect.promise(() => a.transport.terminateSession())
        yield* eventually(5, running(stdio), (n) => n === 1)
        yield* eventually(
          5,
          Effect.sync(() => alive(Number(pidA))),
          (up) => !up,
        )
        expect(alive(Number(pidB))).toBe(true)
      }),
    30_000,
  )

  it.scopedLive("at most max_processes at once: a session beyond is refused with 503 until one ends", () =>
    Effect.gen(function* () {
      const limited = spec({ max_processes: 1 })
      const { stdio, url } = yield* serving(limited)
      const first = yield* connect(url)
      const refused = yield* Effect.promise(() =>
        new Client({ name: "test", version: "1.0.0" }).connect(new StreamableHTTPClientTransport(new URL(url))).then(
          () => "connected",
          (error: unknown) => `${(error as StreamableHTTPError).code} ${String(error)}`,
        ),
      )
      expect(refused).toMatch(/^503 /)
      expect(refused).toContain("at most 1 process and it is in use")
      yield* Effect.promise(() => first.transport.terminateSession())
      yield* eventually(5, running(stdio), (n) => n === 0)
      const second = yield* connect(url)
      const answer = yield* Effect.promise(() => second.client.callTool({ name: "echo", arguments: { text: "again" } }))
      expect(text(answer)).toBe("again")
    }),
  )

  it.scopedLive("one caller holds at most half of max_processes (429 past that); other callers still get theirs", () =>
    Effect.gen(function* () {
      const limited = spec({ max_processes: 4 })
      const { stdio, url } = yield* serving(limited)
      yield* connect(url, "peer-a")
      yield* connect(url, "peer-a")
      const refused = yield* Effect.promise(() =>
        new Client({ name: "test", version: "1.0.0" })
          .connect(
            new StreamableHTTPClientTransport(new URL(url), {
              requestInit: { headers: { "x-test-caller": "peer-a" } },
            }),
          )
          .then(
            () => "connected",
            (error: unknown) => `${(error as StreamableHTTPError).code} ${String(error)}`,
          ),
      )
      expect(refused).toMatch(/^429 /)
      expect(refused).toContain("at most 2 of its 4 processes for one caller")
      const other = yield* connect(url, "peer-b")
      const answer = yield* Effect.promise(() => other.client.callTool({ name: "echo", arguments: { text: "b" } }))
      expect(text(answer)).toBe("b")
      expect(yield* running(stdio)).toBe(3)
    }),
  )

  it.scopedLive(
    "a process that dies is started again and given the session's initialize: the session goes on",
    () =>
      Effect.gen(function* () {
        const { stdio, url, logs } = yield* serving(spec())
        const { client } = yield* connect(url)
        const before = Number(text(yield* Effect.promise(() => client.callTool({ name: "pid", arguments: {} }))))
        const crashed = yield* Effect.promise(() =>
          client.callTool({ name: "crash", arguments: {} }).then(
            () => "answered",
            (error: unknown) => String(error),
          ),
        )
        expect(crashed).toContain("it is being restarted")
        // Sent while the process restarts: held, then answered by the new one.
        const after = yield* Effect.promise(() => client.callTool({ name: "echo", arguments: { text: "still here" } }))
        expect(after.structuredContent).toMatchObject({ text: "still here" })
        expect((after.structuredContent as { pid: number }).pid).not.toBe(before)
        expect(yield* running(stdio)).toBe(1)
        expect(logs.some((line) => line.includes("restarting it"))).toBe(true)
      }),
    30_000,
  )

  it.scopedLive("stderr reaches the log line by line, with the service's secrets redacted", () =>
    Effect.gen(function* () {
      const { url, logs } = yield* serving(spec())
      yield* connect(url)
      const line = yield* eventually(
        5,
        Effect.sync(() => logs.find((l) => l.includes("stdio test server"))),
        (l) => l !== undefined,
      )
      expect(line).toContain("secret=<redacted>")
      expect(line).toContain('"service":"stdio"')
      expect(logs.join("\n")).not.toContain(SECRET)
    }),
  )

  it.live("every process stops when the node stops", () =>
    Effect.gen(function* () {
      const pids = yield* Effect.scoped(
        Effect.gen(function* () {
          const { url } = yield* serving(spec())
          const clients = [yield* connect(url), yield* connect(url)]
          return yield* Effect.forEach(clients, ({ client }) =>
            Effect.map(
              Effect.promise(() => client.callTool({ name: "pid", arguments: {} })),
              (r) => Number(text(r)),
            ),
          )
        }),
      )
      expect(pids.length).toBe(2)
      expect(pids.filter(alive)).toEqual([])
    }),
  )
})

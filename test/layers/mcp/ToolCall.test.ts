/**
 * One tools/call made without the SDK's client, against real MCP SDK servers on loopback (in a session an SDK client
 * opened, as PeerMcp has one), and against a raw server for the answers no SDK server gives.
 */
import { randomUUID } from "node:crypto"
import type { ServerResponse } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { EmptyResultSchema, ListRootsResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, Exit } from "effect"
import { z } from "zod"
import * as ToolCall from "../../../src/layers/mcp/ToolCall.js"
import type { Progress } from "../../../src/services/mcp/PeerMcp.js"
import * as Backends from "../../support/backends.js"

/** What the SDK server's tools saw: whether a progress token came, and calls cancelled by the client. */
interface Seen {
  tokens: Array<boolean>
  cancelled: Array<string>
}

/** A stateful MCP SDK server whose tools exercise what a call may meet on its way. */
const sdkServer = (json: boolean, started: Deferred.Deferred<void>) =>
  Effect.gen(function* () {
    const seen: Seen = { tokens: [], cancelled: [] }
    const tools = () => {
      const mcp = new McpServer({ name: "tool-call-test", version: "1.0.0" })
      mcp.registerTool("echo", { inputSchema: { text: z.string() } }, (args) => ({
        content: [{ type: "text", text: args.text }],
        structuredContent: { length: args.text.length },
      }))
      mcp.registerTool("count", { inputSchema: { steps: z.number() } }, async (args, extra) => {
        const token = extra._meta?.progressToken
        seen.tokens.push(token !== undefined)
        for (let i = 1; i <= args.steps && token !== undefined; i++) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: args.steps, message: `step ${i}` },
          })
        }
        return { content: [{ type: "text", text: `counted ${args.steps}` }] }
      })
      // Asks the client two things mid-call: a ping, and its roots (a capability it did not declare).
      mcp.registerTool("ask", {}, async (extra) => {
        const pong = await extra.sendRequest({ method: "ping" }, EmptyResultSchema, { timeout: 5000 }).then(
          () => "answered",
          (error: Error) => `not answered: ${error.message}`,
        )
        const roots = await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema, { timeout: 5000 }).then(
          () => "listed",
          (error: Error) => error.message,
        )
        return { content: [{ type: "text", text: `ping ${pong}; roots: ${roots}` }] }
      })
      // Pings the client many times at once: how many were answered.
      mcp.registerTool("flood", {}, async (extra) => {
        const pings = Array.from({ length: ToolCall.MAX_REPLIES + 8 }, () =>
          extra.sendRequest({ method: "ping" }, EmptyResultSchema, { timeout: 3000 }).then(
            () => 1,
            () => 0,
          ),
        )
        const answered = (await Promise.all(pings)).reduce((a: number, b: number) => a + b, 0)
        return { content: [{ type: "text", text: `${answered} answered` }] }
      })
      mcp.registerTool("hang", {}, (extra) =>
        Effect.runPromise(Deferred.succeed(started, undefined)).then(
          () =>
            new Promise((resolve) =>
              extra.signal.addEventListener("abort", () => {
                seen.cancelled.push(String(extra.signal.reason))
                resolve({ content: [] })
              }),
            ),
        ),
      )
      return mcp
    }
    const backend = yield* Backends.sessions(tools, { json })
    const url = `${backend.url}/mcp`
    return { url, seen }
  })

/** `post` in a session opened by an SDK client, as PeerMcp's sessions are. */
const session = (url: string) =>
  Effect.gen(function* () {
    const transport = new StreamableHTTPClientTransport(new URL(url))
    const client = new Client({ name: "tool-call-test", version: "1.0.0" })
    yield* Effect.acquireRelease(
      Effect.promise(() => client.connect(transport)),
      () => Effect.promise(() => client.close()),
    )
    const post: ToolCall.Post = (body, signal) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": transport.sessionId ?? "",
          "mcp-protocol-version": transport.protocolVersion ?? "",
        },
        body,
        ...(signal === undefined ? {} : { signal }),
      })
    return post
  })

const call = (
  post: ToolCall.Post,
  tool: string,
  args: Record<string, unknown> = {},
  onProgress?: (progress: Progress) => void,
  signal = new AbortController().signal,
) =>
  Effect.promise(() =>
    ToolCall.call(
      post,
      { id: `mesh-${randomUUID()}`, tool, args, ...(onProgress === undefined ? {} : { onProgress }) },
      signal,
    ).then(
      (result) => Exit.succeed(result),
      (error: unknown) => Exit.fail(error),
    ),
  )

/** A raw server answering every POST with `answer(id)`: what no SDK server sends. */
const raw = (answer: (id: unknown, res: ServerResponse) => void) =>
  Backends.listen((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const message = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { id?: unknown }
      answer(message.id, res)
    })
  }).pipe(Effect.map((backend) => `${backend.url}/mcp`))

const rawPost =
  (url: string): ToolCall.Post =>
  (body, signal) =>
    fetch(url, { method: "POST", body, ...(signal === undefined ? {} : { signal }) })

const failure = (exit: Exit.Exit<unknown, unknown>) => {
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error("the call did not fail")
  return exit.cause.error
}

describe("ToolCall", () => {
  for (const json of [false, true]) {
    it.scoped(`a result comes back as the server sent it (${json ? "a JSON answer" : "an event stream"})`, () =>
      Effect.gen(function* () {
        const server = yield* sdkServer(json, yield* Deferred.make<void>())
        const post = yield* session(server.url)
        const result = yield* call(post, "echo", { text: "hello" })
        expect(result).toEqual(
          Exit.succeed({ content: [{ type: "text", text: "hello" }], structuredContent: { length: 5 } }),
        )
      }),
    )
  }

  it.scoped("progress is asked for with the call's own token and handed on as it comes; not asked for unheard", () =>
    Effect.gen(function* () {
      const server = yield* sdkServer(false, yield* Deferred.make<void>())
      const post = yield* session(server.url)
      const progress: Array<Progress> = []
      const result = yield* call(post, "count", { steps: 3 }, (p) => progress.push(p))
      expect(Exit.isSuccess(result)).toBe(true)
      expect(progress).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })))
      yield* call(post, "count", { steps: 3 })
      expect(server.seen.tokens).toEqual([true, false])
    }),
  )

  it.scoped("the server's ping mid-call is answered; a request for a capability it lacks is refused", () =>
    Effect.gen(function* () {
      const server = yield* sdkServer(false, yield* Deferred.make<void>())
      const post = yield* session(server.url)
      const result = yield* call(post, "ask")
      expect(result).toEqual(
        Exit.succeed({ content: [{ type: "text", text: "ping answered; roots: MCP error -32601: Method not found" }] }),
      )
    }),
  )

  it.live("a server asking many things during one call is answered a bounded number of times", () =>
    Effect.gen(function* () {
      const server = yield* sdkServer(false, yield* Deferred.make<void>())
      const post = yield* session(server.url)
      const result = yield* call(post, "flood")
      expect(result).toEqual(Exit.succeed({ content: [{ type: "text", text: `${ToolCall.MAX_REPLIES} answered` }] }))
    }).pipe(Effect.scoped),
  )

  it.live("a call given up tells the server, which stops the tool", () =>
    Effect.gen(function* () {
      const started = yield* Deferred.make<void>()
      const server = yield* sdkServer(false, started)
      const post = yield* session(server.url)
      const controller = new AbortController()
      const running = yield* Effect.fork(call(post, "hang", {}, undefined, controller.signal))
      yield* Deferred.await(started)
      controller.abort(new Error("the agent went away"))
      yield* running.await
      for (let i = 0; i < 100 && server.seen.cancelled.length === 0; i++) yield* Effect.sleep("20 millis")
      expect(server.seen.cancelled).toEqual(["the agent went away"])
    }).pipe(Effect.scoped),
  )

  it.scoped("an event stream that ends before the result fails at once", () =>
    Effect.gen(function* () {
      const url = yield* raw((_id, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.end('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n')
      })
      const error = failure(yield* call(rawPost(url), "echo"))
      expect(error).toBeInstanceOf(ToolCall.NoResult)
    }),
  )

  it.scoped("an answer that is not a tool result is refused, not handed on", () =>
    Effect.gen(function* () {
      const url = yield* raw((id, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { content: "not a list of blocks" } }))
      })
      expect(String(failure(yield* call(rawPost(url), "echo")))).toContain("not a tool result")
    }),
  )

  it.scoped("a JSON-RPC error is an McpError with its code; an HTTP error keeps its status", () =>
    Effect.gen(function* () {
      const rpc = yield* raw((id, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.end(`data: ${JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32602, message: "bad args" } })}\n\n`)
      })
      const error = failure(yield* call(rawPost(rpc), "echo"))
      expect(error).toBeInstanceOf(McpError)
      expect((error as McpError).code).toBe(-32602)
      const gone = yield* raw((_id, res) => {
        res.writeHead(404, { "content-type": "application/json" })
        res.end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}')
      })
      const status = failure(yield* call(rawPost(gone), "echo"))
      expect(status).toBeInstanceOf(StreamableHTTPError)
      expect((status as StreamableHTTPError).code).toBe(404)
    }),
  )
})

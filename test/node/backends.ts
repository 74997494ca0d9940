/**
 * Services a proxied request can reach in tests: the published MCP reference server (`server-everything`) as a child
 * process, and one small HTTP backend that echoes requests, streams server-sent events, holds a stream open until
 * the client goes away, and serves an A2A agent card. Everything listens on loopback only.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type IncomingMessage } from "node:http"
import { join } from "node:path"
import { Effect, type Scope } from "effect"
import { freePort } from "../../src/testing/Ports.js"

const root = join(import.meta.dirname, "..", "..")

/** `server-everything` speaking Streamable HTTP at `http://127.0.0.1:<port>/mcp`, stopped with the scope. */
export const everything: Effect.Effect<{ readonly url: string }, Error, Scope.Scope> = Effect.gen(function* () {
  const port = yield* Effect.promise(freePort)
  const child = yield* Effect.acquireRelease(
    Effect.sync(() =>
      spawn(join(root, "node_modules", ".bin", "mcp-server-everything"), ["streamableHttp"], {
        env: { ...process.env, PORT: String(port) },
        stdio: ["ignore", "pipe", "pipe"],
      }),
    ),
    (child) => Effect.sync(() => child.kill("SIGTERM")),
  )
  yield* listening(child, /listening on port/i)
  return { url: `http://127.0.0.1:${port}/mcp` }
})

const listening = (child: ChildProcess, ready: RegExp) =>
  Effect.async<void, Error>((resume) => {
    let seen = ""
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("utf8")
      if (ready.test(seen)) resume(Effect.void)
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("exit", (code) => resume(Effect.fail(new Error(`MCP server exited (${code}): ${seen.slice(-500)}`))))
  }).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("MCP server did not start") }))

export interface Echoed {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export interface TestBackend {
  readonly url: string
  /** `/hold` requests closed by their client so far. */
  readonly holdsClosed: () => number
  /** Lets `/gated` send its next event. */
  readonly advance: () => void
}

/** Sends one SSE event. */
const event = (n: number) => `id: ${n}\ndata: {"n":${n}}\n\n`

/**
 * `/echo` answers what it received; `/events` sends 20 events 100 ms apart; `/gated` sends 20 events, each after the
 * first only once the test called `advance`; `/hold` sends one event and keeps the stream open, counting clients that
 * went away; `/silent` never answers; `/a2a/.well-known/agent-card.json` is an agent card naming the backend's own
 * address.
 */
export const testBackend: Effect.Effect<TestBackend, Error, Scope.Scope> = Effect.gen(function* () {
  let holdsClosed = 0
  let permits = 0
  const waiting: Array<() => void> = []
  const advance = () => {
    const next = waiting.shift()
    if (next === undefined) permits += 1
    else next()
  }
  const permit = (): Promise<void> => {
    if (permits > 0) {
      permits -= 1
      return Promise.resolve()
    }
    return new Promise((resolve) => waiting.push(resolve))
  }
  let base = ""
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]
    if (path === "/gated") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      let open = true
      res.once("close", () => {
        open = false
      })
      void (async () => {
        for (let n = 1; n <= 20 && open; n++) {
          if (n > 1) await permit()
          res.write(event(n))
        }
        res.end()
      })()
      return
    }
    if (path === "/events") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      let n = 0
      const timer = setInterval(() => {
        n += 1
        res.write(event(n))
        if (n === 20) {
          clearInterval(timer)
          res.end()
        }
      }, 100)
      res.once("close", () => clearInterval(timer))
      return
    }
    if (path === "/hold") {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(event(1))
      res.once("close", () => {
        holdsClosed += 1
      })
      return
    }
    // Takes the request and never answers it, not even with headers.
    if (path === "/silent") return
    if (path === "/a2a/.well-known/agent-card.json") {
      const card = {
        name: "test agent",
        url: `${base}/a2a/rpc`,
        preferredTransport: "JSONRPC",
        additionalInterfaces: [
          { url: `${base}/a2a/rpc`, transport: "JSONRPC" },
          { url: "http://elsewhere.invalid/grpc", transport: "GRPC" },
        ],
        skills: [{ id: "s", name: "skill", url: "http://keep.invalid/" }],
      }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(card))
      return
    }
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const echoed: Echoed = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      }
      res.writeHead(path === "/created" ? 201 : 200, { "content-type": "application/json", "x-backend": "echo" })
      res.end(JSON.stringify(echoed))
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.async<number, Error>((resume) => {
      server.once("error", (e) => resume(Effect.fail(e)))
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
  base = `http://127.0.0.1:${port}`
  return { url: base, holdsClosed: () => holdsClosed, advance }
})

/**
 * One stdio MCP server run by this node: the `command` of a service, spawned with a clean environment (the
 * service's `env` plus the few basics a program expects: PATH, HOME, USER, LOGNAME, SHELL, TERM), speaking
 * newline-delimited JSON-RPC on stdin and stdout. Its stderr goes to the node's log, line by line, redacted and
 * bounded. The process belongs to a scope: closing it ends stdin, then signals the process group (TERM, then KILL),
 * so a wrapper such as `npx` does not leave its server behind.
 */
import { type ChildProcess, spawn as spawnChild } from "node:child_process"
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Chunk, Duration, Effect, type Scope, Stream } from "effect"
import type { ServiceSpec } from "../../../domain/NodeFile.js"
import { describe } from "../../../platform/Describe.js"
import { redact } from "../../node/LogRingLive.js"
import { MAX_MESSAGE_BYTES } from "../../proxy/McpMessages.js"

/** stderr lines are cut to this length, and at most LOG_LINES of them a minute reach the log. */
const MAX_LINE = 1000
const LOG_LINES = 100
/**
 * After stdin ends, the process gets this long to exit by itself before TERM, and as long again before KILL: short,
 * since a stopping node has 10 seconds in all.
 */
const GRACE = Duration.seconds(1)

/** A running server as an MCP SDK transport: messages both ways, `onclose` when the process has ended. */
export class McpProcess implements Transport {
  onmessage?: (message: JSONRPCMessage) => void
  onclose?: () => void
  onerror?: (error: Error) => void
  private readonly buffer = new ReadBuffer({ maxBufferSize: MAX_MESSAGE_BYTES })

  constructor(readonly child: ChildProcess) {
    child.stdout?.on("data", (chunk: Buffer) => {
      try {
        this.buffer.append(chunk)
      } catch (error) {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)))
        child.kill("SIGKILL")
        return
      }
      while (true) {
        let message: JSONRPCMessage | null
        try {
          message = this.buffer.readMessage()
        } catch (error) {
          // A line that is not JSON-RPC (a server printing to stdout): skipped, as the SDK's own transport does.
          this.onerror?.(error instanceof Error ? error : new Error(String(error)))
          continue
        }
        if (message === null) break
        this.onmessage?.(message)
      }
    })
    child.stdin?.on("error", (error) => this.onerror?.(error))
    child.once("close", () => this.onclose?.())
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null
  }

  async start(): Promise<void> {}

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child.stdin
      if (stdin === null || !stdin.writable || this.exited) {
        return reject(new Error("the MCP server process has ended"))
      }
      if (stdin.write(serializeMessage(message))) resolve()
      else stdin.once("drain", resolve)
    })
  }

  /** Asks the server to end (stdin closed); the owning scope makes sure it does. */
  async close(): Promise<void> {
    this.child.stdin?.end()
  }
}

/** Completes when the process has exited (at once if it has). */
const exit = (child: ChildProcess): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const done = () => resume(Effect.void)
    child.once("exit", done)
    return Effect.sync(() => child.off("exit", done))
  })

/** Signals the process's group (it leads one: spawned detached), else the process alone. */
const signal = (child: ChildProcess, name: NodeJS.Signals) =>
  Effect.sync(() => {
    if (child.exitCode !== null || child.signalCode !== null) return
    try {
      if (child.pid !== undefined) process.kill(-child.pid, name)
      else child.kill(name)
    } catch {
      child.kill(name)
    }
  })

const terminate = (child: ChildProcess): Effect.Effect<void> =>
  Effect.gen(function* () {
    child.stdin?.end()
    const gone = yield* Effect.timeout(exit(child), GRACE).pipe(Effect.isSuccess)
    if (gone) return
    yield* signal(child, "SIGTERM")
    const ended = yield* Effect.timeout(exit(child), GRACE).pipe(Effect.isSuccess)
    if (!ended) yield* signal(child, "SIGKILL")
  })

/** Splits text into lines of at most MAX_LINE characters; the rest of a longer line is dropped. */
const lines = (text: Stream.Stream<string>): Stream.Stream<string> =>
  text.pipe(
    Stream.mapAccum({ carry: "", skipping: false }, (state, chunk) => {
      let input = chunk
      let skipping = state.skipping
      if (skipping) {
        const newline = input.indexOf("\n")
        if (newline === -1) return [state, []]
        input = input.slice(newline + 1)
        skipping = false
      }
      const parts = (state.carry + input).split("\n")
      const rest = parts.pop() ?? ""
      const out = parts.map((line) => line.slice(0, MAX_LINE))
      if (rest.length > MAX_LINE) return [{ carry: "", skipping: true }, [...out, rest.slice(0, MAX_LINE)]]
      return [{ carry: rest, skipping }, out]
    }),
    Stream.flattenIterables,
  )

/** The service's secrets as they might appear in output: its `env` values long enough to be one. */
const secretsOf = (spec: ServiceSpec): ReadonlyArray<string> =>
  Object.values(spec.env).filter((value) => value.length >= 8)

const scrub = (line: string, secrets: ReadonlyArray<string>): string =>
  redact(secrets.reduce((text, secret) => text.split(secret).join("<redacted>"), line)).trimEnd()

/** The process's stderr into the node's log, until it ends. */
const logStderr = (child: ChildProcess, spec: ServiceSpec): Effect.Effect<void> => {
  const stderr = child.stderr
  if (stderr === null) return Effect.void
  const secrets = secretsOf(spec)
  stderr.setEncoding("utf8")
  // Read as it comes; a buffer that fills (the log cannot keep up) drops text rather than holding the process up.
  return Stream.async<string>(
    (emit) => {
      stderr.on("data", (text: string) => void emit.single(text))
      stderr.once("end", () => void emit.end())
      stderr.once("error", () => void emit.end())
    },
    { bufferSize: 64, strategy: "dropping" },
  ).pipe(
    lines,
    Stream.map((line) => scrub(line, secrets)),
    Stream.filter((line) => line.length > 0),
    Stream.rechunk(1),
    Stream.throttle({
      cost: Chunk.size,
      units: LOG_LINES,
      duration: Duration.minutes(1),
      burst: LOG_LINES,
      strategy: "enforce",
    }),
    Stream.runForEach((line) => Effect.logInfo(line)),
    Effect.annotateLogs({ service: spec.name, pid: child.pid ?? 0, stream: "stderr" }),
    Effect.ignore,
  )
}

/** Starts the service's command for the life of the scope; fails when it cannot be started at all. */
export const spawn = (spec: ServiceSpec): Effect.Effect<McpProcess, string, Scope.Scope> =>
  Effect.gen(function* () {
    const [program, ...args] = spec.command ?? []
    if (program === undefined) return yield* Effect.fail("the service runs no command")
    const child = yield* Effect.acquireRelease(
      Effect.async<ChildProcess, string>((resume) => {
        const child = spawnChild(program, args, {
          env: { ...getDefaultEnvironment(), ...spec.env },
          stdio: ["pipe", "pipe", "pipe"],
          shell: false,
          // Its own process group, so that stopping it reaches whatever it started.
          detached: true,
        })
        child.once("spawn", () => resume(Effect.succeed(child)))
        child.once("error", (error) => resume(Effect.fail(`${program} could not be started: ${describe(error)}`)))
      }),
      terminate,
    )
    // Interruptible whatever the caller's region (the pool spawns inside an acquire): a logger that could not be
    // interrupted would hold the scope's close until stderr ends, which only the process's end, after it, brings.
    yield* Effect.forkScoped(Effect.interruptible(logStderr(child, spec)))
    return new McpProcess(child)
  })

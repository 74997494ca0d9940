/**
 * One caller session of a stdio MCP server: the caller's Streamable HTTP session (the MCP SDK's server transport,
 * stateful, so every HTTP rule of the protocol is the SDK's) joined to a process of its own. A stdio server holds one
 * session's state (its initialize, log level, subscriptions), so processes are never shared between sessions.
 *
 * Messages pass unchanged both ways, but for tool lists, cut to the grant of a caller holding single tools. A
 * response goes back on the stream of its request; a progress notification on the stream of the request that asked
 * for it; anything else the server sends goes on the stream of the newest request still open, or on the session's
 * GET stream.
 *
 * If the process dies once the session is initialized, requests still open get an error, the process is started
 * again (after 1 s, doubling up to 30 s while it keeps dying within a minute, at most MAX_RESTARTS times in a row),
 * the session's initialize is replayed to it, and what arrived meanwhile is passed on: the caller keeps its session.
 * A process that dies before its session is initialized ends the session.
 */
import { randomUUID } from "node:crypto"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js"
import { Clock, Deferred, Duration, Effect, ExecutionStrategy, Exit, Runtime, Scope } from "effect"
import * as McpGrant from "../../../domain/McpGrant.js"
import type { ServiceSpec } from "../../../domain/NodeFile.js"
import * as McpProcess from "./McpProcess.js"

const MAX_RESTARTS = 5
/** A process that ran this long before dying was healthy: its restarts count from one again. */
const STABLE = Duration.minutes(1)
const FIRST_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 30_000
/** The replayed initialize must be answered this quickly. */
const REPLAY_TIMEOUT = Duration.seconds(30)
/** Messages held while the process restarts; requests beyond that are answered with an error at once. */
const MAX_QUEUE = 256
/** JSON-RPC "internal error". */
const INTERNAL_ERROR = -32603

export interface Bridge {
  /** The peer that opened the session; nobody else may use it. */
  readonly caller: string
  readonly service: string
  readonly transport: StreamableHTTPServerTransport
  /** What the caller holds of the service, as of its latest request: the answers it gets are cut to it. */
  grant: McpGrant.Grant
  /** Ends the session and its process. */
  readonly close: Effect.Effect<void>
  readonly closed: Effect.Effect<boolean>
}

export interface Options {
  readonly spec: ServiceSpec
  readonly caller: string
  /** The session ended, whoever ended it. */
  readonly onClosed: (bridge: Bridge) => Effect.Effect<void>
}

interface Live {
  readonly process: McpProcess.McpProcess
  readonly scope: Scope.CloseableScope
}

/**
 * What the bridge knows of the session: its process and traffic. Plain fields, like a socket's state: they are
 * read and written from the transports' callbacks, synchronously, and from this session's restart fiber.
 */
class Traffic {
  /** The process serving the session; none while it restarts. */
  live: Live | undefined
  closed = false
  /** Restarts in a row of a process that did not live long. */
  failures = 0
  /** Requests from the caller not answered yet, in arrival order, with their progress tokens. */
  readonly open = new Map<RequestId, string | number | undefined>()
  readonly progress = new Map<string | number, RequestId>()
  initialize: JSONRPCRequest | undefined
  initialized = false
  /** The initialize was answered without an error: from then on a dead process is restarted. */
  ready = false
  queue: Array<JSONRPCMessage> = []
  replay: { readonly id: string; readonly answered: Deferred.Deferred<boolean> } | undefined

  sent(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      if (message.method === "initialize") this.initialize = message
      const token = message.params?._meta?.progressToken
      this.open.set(message.id, token)
      if (token !== undefined) this.progress.set(token, message.id)
    } else if (isJSONRPCNotification(message) && message.method === "notifications/initialized") {
      this.initialized = true
    }
  }

  answered(id: RequestId): void {
    const token = this.open.get(id)
    this.open.delete(id)
    if (token !== undefined) this.progress.delete(token)
  }

  /** The request whose stream a server message should travel on, if any is open. */
  relatedTo(message: JSONRPCMessage): RequestId | undefined {
    if (isJSONRPCNotification(message)) {
      const token = message.params?.progressToken
      if (typeof token === "string" || typeof token === "number") {
        const id = this.progress.get(token)
        if (id !== undefined) return id
      }
    }
    let newest: RequestId | undefined
    for (const id of this.open.keys()) newest = id
    return newest
  }
}

const errorFor = (id: RequestId, message: string): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  error: { code: INTERNAL_ERROR, message },
})

/** Opens a session with a process of its own, in a scope forked from the caller's; closing the bridge closes it. */
export const make = (options: Options): Effect.Effect<Bridge, string, Scope.Scope> =>
  Effect.gen(function* () {
    const { spec } = options
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const run = Runtime.runFork(yield* Effect.runtime<never>())
    const traffic = new Traffic()
    const log = Effect.annotateLogs({ service: spec.name, caller: options.caller })

    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID })

    const toClient = (received: JSONRPCMessage) => {
      const message = (McpGrant.filterAnswer(bridge.grant, received) as JSONRPCMessage | undefined) ?? received
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
        const replay = traffic.replay
        if (replay !== undefined && message.id === replay.id) {
          Deferred.unsafeDone(replay.answered, Exit.succeed(isJSONRPCResultResponse(message)))
          return
        }
        if (traffic.initialize !== undefined && message.id === traffic.initialize.id && !traffic.ready) {
          traffic.ready = isJSONRPCResultResponse(message)
        }
        if (message.id !== undefined) traffic.answered(message.id)
        transport.send(message).catch(() => undefined)
        return
      }
      const related = traffic.relatedTo(message)
      transport
        .send(message, related === undefined ? {} : { relatedRequestId: related })
        // Its request's stream is gone: the session's GET stream, if one is open, still reaches the caller.
        .catch(() => (related === undefined ? undefined : transport.send(message).catch(() => undefined)))
    }

    const toProcess = (message: JSONRPCMessage) => {
      traffic.sent(message)
      if (traffic.live !== undefined) {
        traffic.live.process.send(message).catch(() => undefined)
        return
      }
      if (traffic.queue.length < MAX_QUEUE) traffic.queue.push(message)
      else if (isJSONRPCRequest(message)) {
        traffic.answered(message.id)
        toClient(errorFor(message.id, "the MCP server is restarting; try again shortly"))
      }
    }

    /** Starts a process in a scope of its own (closing it stops the process). */
    const start: Effect.Effect<Live, string> = Effect.gen(function* () {
      const processScope = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      const process = yield* McpProcess.spawn(spec).pipe(
        Scope.extend(processScope),
        Effect.onError((cause) => Scope.close(processScope, Exit.failCause(cause))),
      )
      const startedAt = yield* Clock.currentTimeMillis
      process.onmessage = toClient
      process.onclose = () => {
        // In the session's scope: closing the session stops a restart under way.
        run(Effect.forkIn(died(process, startedAt), scope))
      }
      return { process, scope: processScope }
    })

    const close: Effect.Effect<void> = Effect.gen(function* () {
      if (traffic.closed) return
      traffic.closed = true
      yield* Effect.promise(() => transport.close().catch(() => undefined))
      yield* Scope.close(scope, Exit.void)
      yield* options.onClosed(bridge)
    }).pipe(Effect.uninterruptible)

    /** Answers every open request with an error: the process that would have answered is gone. */
    const failOpen = (reason: string) => {
      for (const id of [...traffic.open.keys()]) {
        traffic.answered(id)
        transport.send(errorFor(id, reason)).catch(() => undefined)
      }
    }

    /** Starts a new process, replays the session's initialize to it and passes on what waited. */
    const restartOnce = Effect.gen(function* () {
      const next = yield* start
      const init = traffic.initialize
      if (init !== undefined) {
        const replay = { id: `mesh-restart-${randomUUID()}`, answered: yield* Deferred.make<boolean>() }
        traffic.replay = replay
        yield* Effect.promise(() => next.process.send({ ...init, id: replay.id }).catch(() => undefined))
        const ok = yield* Deferred.await(replay.answered).pipe(
          Effect.timeoutTo({ duration: REPLAY_TIMEOUT, onTimeout: () => false, onSuccess: (answered) => answered }),
        )
        traffic.replay = undefined
        if (!ok) {
          yield* Scope.close(next.scope, Exit.void)
          return yield* Effect.fail("the restarted process did not accept the session's initialize")
        }
        if (traffic.initialized) {
          yield* Effect.promise(() =>
            next.process.send({ jsonrpc: "2.0", method: "notifications/initialized" }).catch(() => undefined),
          )
        }
      }
      traffic.live = next
      const waiting = traffic.queue
      traffic.queue = []
      for (const message of waiting) next.process.send(message).catch(() => undefined)
    })

    const died = (process: McpProcess.McpProcess, startedAt: number): Effect.Effect<void> =>
      Effect.gen(function* () {
        const live = traffic.live
        if (traffic.closed || live === undefined || live.process !== process) {
          // A process started by a restart ended before it took the replayed initialize.
          if (traffic.replay !== undefined) Deferred.unsafeDone(traffic.replay.answered, Exit.succeed(false))
          return
        }
        traffic.live = undefined
        yield* Scope.close(live.scope, Exit.void)
        // Closing the session interrupts this fiber (it runs in the session's scope): close from another one.
        const end = Effect.sync(() => run(close))
        if (!traffic.ready) {
          failOpen("the MCP server process ended before the session was initialized")
          yield* Effect.logWarning("stdio MCP server ended before its session was initialized").pipe(log)
          return yield* end
        }
        failOpen("the MCP server process ended; it is being restarted")
        const now = yield* Clock.currentTimeMillis
        traffic.failures = now - startedAt >= Duration.toMillis(STABLE) ? 1 : traffic.failures + 1
        while (true) {
          if (traffic.failures > MAX_RESTARTS) {
            yield* Effect.logWarning("stdio MCP server keeps ending; the session is closed").pipe(log)
            return yield* end
          }
          const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (traffic.failures - 1))
          yield* Effect.logWarning("stdio MCP server ended; restarting it").pipe(
            log,
            Effect.annotateLogs({ restart_in_ms: backoff }),
          )
          yield* Effect.sleep(Duration.millis(backoff))
          const outcome = yield* Effect.either(restartOnce)
          if (outcome._tag === "Right") return
          traffic.failures += 1
          yield* Effect.logWarning("restarting the stdio MCP server failed").pipe(
            log,
            Effect.annotateLogs({ reason: outcome.left }),
          )
        }
      })

    const bridge: Bridge = {
      caller: options.caller,
      service: spec.name,
      transport,
      grant: McpGrant.SERVICE,
      close,
      closed: Effect.sync(() => traffic.closed),
    }

    traffic.live = yield* Effect.onError(start, (cause) => Scope.close(scope, Exit.failCause(cause)))
    transport.onmessage = toProcess
    transport.onclose = () => {
      run(close)
    }
    yield* Effect.promise(() => transport.start())
    return bridge
  })

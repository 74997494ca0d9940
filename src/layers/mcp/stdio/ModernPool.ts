/**
 * Modern (2026-07-28) stdio MCP servers: found by `server/discover` (spec 2026-07-28, transports/stdio: any answer
 * that is not a modern one means legacy), and served statelessly from a bounded pool of processes instead of a
 * process per session. A modern request is self-describing, so any idle process of the service can take it: one
 * request at a time per process, the pool's processes counted against the service's `max_processes` (and a caller's
 * share) like sessions' processes, kept while idle for IDLE and then stopped. The answer goes back as an event stream
 * (progress as it comes, then the result); a caller holding single tools gets tool lists cut to its grant.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Duration, Effect, ExecutionStrategy, Exit, Ref, Scope } from "effect"
import pkg from "../../../../package.json" with { type: "json" }
import * as McpEra from "../../../domain/McpEra.js"
import * as McpGrant from "../../../domain/McpGrant.js"
import type { ServiceSpec } from "../../../domain/NodeFile.js"
import * as McpProcess from "./McpProcess.js"

/** An idle pooled process is stopped after this long unused. */
export const IDLE = Duration.minutes(5)
/** A discover probe gets this long: a legacy server may say nothing at all to a request before `initialize`. */
export const DISCOVER_TIMEOUT = Duration.seconds(5)
/**
 * A request running longer than this is given up and its process stopped (the calling node gives up sooner on a
 * request without progress; its going away stops the process too).
 */
const MAX_REQUEST = Duration.minutes(10)

interface Pooled {
  readonly process: McpProcess.McpProcess
  readonly scope: Scope.CloseableScope
  readonly lastUsedMs: number
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The request's answer and what the server said before it, read off a process; fails when the process ends. */
const exchange = (
  process: McpProcess.McpProcess,
  request: { readonly id: unknown },
  onNotice: (message: JSONRPCMessage) => void,
): Effect.Effect<JSONRPCMessage, string> =>
  Effect.async<JSONRPCMessage, string>((resume) => {
    const done = (effect: Effect.Effect<JSONRPCMessage, string>) => {
      delete process.onmessage
      delete process.onclose
      resume(effect)
    }
    process.onmessage = (message) => {
      const m = message as { id?: unknown; method?: unknown }
      if (m.method === undefined && m.id === request.id) return done(Effect.succeed(message))
      // Notifications go on; a request of the server's has no session to be answered in, and is dropped.
      if (m.id === undefined) onNotice(message)
    }
    process.onclose = () => done(Effect.fail("the server's process ended before it answered"))
    process.send(request as JSONRPCMessage).catch(() => done(Effect.fail("the server's process took no request")))
    return Effect.sync(() => {
      delete process.onmessage
      delete process.onclose
    })
  })

/** Whether a `server/discover` answer names a modern version. */
const showsModern = (answer: JSONRPCMessage): boolean => {
  const result = (answer as { result?: unknown }).result
  if (!isObject(result) || !Array.isArray(result.supportedVersions)) return false
  return result.supportedVersions.some((v) => typeof v === "string" && McpEra.isModernVersion(v))
}

const discoverRequest = {
  jsonrpc: "2.0",
  id: "mesh-discover",
  method: "server/discover",
  params: { _meta: McpEra.envelope(undefined, { name: "mesh-node", version: pkg.version }) },
}

/** Runs the service's command once and asks it `server/discover`: its era. The process stops with the probe. */
export const discover = (spec: ServiceSpec): Effect.Effect<McpEra.Era, string> =>
  Effect.scoped(
    Effect.gen(function* () {
      const process = yield* McpProcess.spawn(spec)
      const answer = yield* exchange(process, discoverRequest, () => undefined).pipe(
        Effect.timeout(DISCOVER_TIMEOUT),
        Effect.either,
      )
      return answer._tag === "Right" && showsModern(answer.right) ? "modern" : "legacy"
    }),
  )

/** A modern request's tools, page by page through the pool (for the probe). */
export const toolsRequest = (cursor: string | undefined, n: number) => ({
  jsonrpc: "2.0" as const,
  id: `mesh-list-${n}`,
  method: "tools/list",
  params: {
    ...(cursor === undefined ? {} : { cursor }),
    _meta: McpEra.envelope(undefined, { name: "mesh-node", version: pkg.version }),
  },
})

export interface Slots {
  /** Takes a process slot of the service for `caller` (none for a probe); why not, when it cannot. */
  readonly take: (spec: ServiceSpec, caller?: string) => Effect.Effect<"taken" | "full" | "share">
  readonly free: (name: string, caller?: string) => Effect.Effect<void>
}

export const make = (slots: Slots) =>
  Effect.gen(function* () {
    const layerScope = yield* Effect.scope
    const idle = yield* Ref.make<ReadonlyMap<string, ReadonlyArray<Pooled>>>(new Map())

    /** An idle process of the service, or a new one in a slot of its own; why none otherwise. */
    const acquire = (spec: ServiceSpec, caller: string | undefined) =>
      Effect.gen(function* () {
        const found = yield* Ref.modify(
          idle,
          (map): [Pooled | undefined, ReadonlyMap<string, ReadonlyArray<Pooled>>] => {
            const all = map.get(spec.name) ?? []
            const live = all.filter((p) => !p.process.exited)
            const [first, ...rest] = live
            return [first, new Map(map).set(spec.name, rest)]
          },
        )
        if (found !== undefined) return found
        const slot = yield* slots.take(spec, caller)
        if (slot !== "taken") return slot
        const scope = yield* Scope.fork(layerScope, ExecutionStrategy.sequential)
        // The slot is freed when the process's scope closes, whatever closes it.
        yield* Scope.addFinalizer(scope, slots.free(spec.name, caller))
        const process = yield* McpProcess.spawn(spec).pipe(
          Scope.extend(scope),
          Effect.tapError(() => Scope.close(scope, Exit.void)),
        )
        return { process, scope, lastUsedMs: 0 }
      })

    const release = (name: string, pooled: Pooled, healthy: boolean) =>
      Effect.gen(function* () {
        if (!healthy || pooled.process.exited) return yield* Scope.close(pooled.scope, Exit.void)
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(idle, (map) =>
          new Map(map).set(name, [...(map.get(name) ?? []), { ...pooled, lastUsedMs: now }]),
        )
      })

    /**
     * One request on a pooled process; its answer (and the notifications before it) handed to `onNotice` / returned.
     * Fails with a short reason; "full" / "share" when no process could be had.
     */
    const request = (
      spec: ServiceSpec,
      caller: string | undefined,
      message: { readonly id: unknown },
      onNotice: (message: JSONRPCMessage) => void,
    ): Effect.Effect<JSONRPCMessage, string | "full" | "share"> =>
      Effect.acquireUseRelease(
        acquire(spec, caller),
        (pooled) =>
          pooled === "full" || pooled === "share"
            ? Effect.fail(pooled)
            : exchange(pooled.process, message, onNotice).pipe(
                Effect.timeoutFail({
                  duration: MAX_REQUEST,
                  onTimeout: () => `no answer within ${Duration.format(MAX_REQUEST)}`,
                }),
              ),
        // A process whose request failed or was given up may still be at it: stopped, not pooled again.
        (pooled, exit) =>
          pooled === "full" || pooled === "share" ? Effect.void : release(spec.name, pooled, Exit.isSuccess(exit)),
      )

    /** Serves one modern HTTP request to a stdio server: `body` is the checked JSON-RPC message. */
    const serve = (
      spec: ServiceSpec,
      caller: string,
      body: unknown,
      grant: McpGrant.Grant,
      res: ServerResponse,
      _req: IncomingMessage,
    ): Effect.Effect<void, "full" | "share"> =>
      Effect.gen(function* () {
        if (!isObject(body) || typeof body.method !== "string") {
          const text = JSON.stringify({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32600, message: "Invalid Request: one JSON-RPC request per modern POST" },
          })
          res.writeHead(400, { "content-type": "application/json" })
          res.end(text)
          return
        }
        // A notification has nothing to answer; a stateless server keeps nothing it could tell.
        if (body.id === undefined) {
          res.writeHead(202)
          res.end()
          return
        }
        const write = (message: unknown) => {
          if (!res.headersSent) res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
          res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
        }
        // The caller going away gives the request up (its process is stopped: it may be at it still).
        const gone = Effect.async<"gone">((resume) => {
          const closed = () => resume(Effect.succeed("gone"))
          res.once("close", closed)
          return Effect.sync(() => res.off("close", closed))
        })
        const raced = yield* Effect.raceFirst(
          request(spec, caller, body as { id: unknown }, write).pipe(Effect.either),
          gone,
        )
        if (raced === "gone") return
        const answer = raced
        if (answer._tag === "Left") {
          const why = answer.left
          if ((why === "full" || why === "share") && !res.headersSent) {
            return yield* Effect.fail<"full" | "share">(why)
          }
          const error = { jsonrpc: "2.0", id: body.id, error: { code: -32603, message: why } }
          if (res.headersSent) write(error)
          else res.writeHead(502, { "content-type": "application/json" })
          res.end(res.headersSent ? undefined : JSON.stringify(error))
          return
        }
        write(McpGrant.filterAnswer(grant, answer.right) ?? answer.right)
        res.end()
      })

    /** Lists the tools of a modern server through the pool (a probe: no caller). */
    const toolNames = (spec: ServiceSpec, limit: number) =>
      Effect.gen(function* () {
        const names: Array<string> = []
        let cursor: string | undefined
        for (let page = 0; page < 128 && names.length < limit; page++) {
          const answer = yield* request(spec, undefined, toolsRequest(cursor, page), () => undefined)
          const result = (answer as { result?: unknown }).result
          if (!isObject(result) || !Array.isArray(result.tools)) return yield* Effect.fail("not a tool list")
          for (const tool of result.tools) if (isObject(tool) && typeof tool.name === "string") names.push(tool.name)
          const next = typeof result.nextCursor === "string" ? result.nextCursor : undefined
          if (next === undefined || next === cursor) break
          cursor = next
        }
        return names.slice(0, limit)
      })

    const sweep = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const stale = yield* Ref.modify(idle, (map): [Array<Pooled>, ReadonlyMap<string, ReadonlyArray<Pooled>>] => {
        const old: Array<Pooled> = []
        const next = new Map<string, ReadonlyArray<Pooled>>()
        for (const [name, all] of map) {
          next.set(
            name,
            all.filter((p) => {
              const keep = now - p.lastUsedMs <= Duration.toMillis(IDLE) && !p.process.exited
              if (!keep) old.push(p)
              return keep
            }),
          )
        }
        return [old, next]
      })
      yield* Effect.forEach(stale, (p) => Scope.close(p.scope, Exit.void), { discard: true })
    })

    return { serve, toolNames, sweep, idle: Effect.map(Ref.get(idle), (map) => map) }
  })

export type Pool = Effect.Effect.Success<ReturnType<typeof make>>

/**
 * Which peer opened each session of an HTTP MCP backend, as the serving side saw it: the `Mcp-Session-Id` a backend
 * answers a request without one with (its initialize) belongs to that request's caller, and any other caller, or a
 * session this node never saw opened, gets 404 as an unknown session does (stdio sessions are bound the same way, in
 * StdioServersLive). A session id is a bearer token to most backends; a peer that learnt one must not use it.
 * Bindings unused for IDLE are forgotten (the caller opens a new session on its 404), at most MAX_BINDINGS kept.
 */
import type { ServerResponse } from "node:http"
import { Clock, Duration, Effect, Ref, Schedule, type Scope } from "effect"

export const IDLE = Duration.hours(1)
const MAX_BINDINGS = 10_000

interface Binding {
  readonly caller: string
  readonly lastUsedMs: number
}

/** A session the caller may not use, answered as an MCP server answers an unknown one. */
export const writeNotFound = (res: ServerResponse): void => {
  const text = JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null })
  res.writeHead(404, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const key = (service: string, id: string) => `${service}\n${id}`

export const make = Effect.gen(function* () {
  const bindings = yield* Ref.make<ReadonlyMap<string, Binding>>(new Map())

  /** Whether `caller` opened the session; a use keeps the binding. */
  const owns = (service: string, caller: string, id: string): Effect.Effect<boolean> =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      return yield* Ref.modify(bindings, (map): [boolean, ReadonlyMap<string, Binding>] => {
        const found = map.get(key(service, id))
        if (found === undefined || found.caller !== caller) return [false, map]
        return [true, new Map(map).set(key(service, id), { caller, lastUsedMs: now })]
      })
    })

  /** The backend opened a session for `caller`. The oldest bindings go first when there are too many. */
  const bind = (service: string, caller: string, id: string): Effect.Effect<void> =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      yield* Ref.update(bindings, (map) => {
        const next = new Map(map)
        // Re-inserted at the end: a Map keeps insertion order, so the first entries are the oldest bindings.
        next.delete(key(service, id))
        next.set(key(service, id), { caller, lastUsedMs: now })
        for (const old of next.keys()) {
          if (next.size <= MAX_BINDINGS) break
          next.delete(old)
        }
        return next
      })
    })

  const unbind = (service: string, id: string): Effect.Effect<void> =>
    Ref.update(bindings, (map) => {
      const next = new Map(map)
      next.delete(key(service, id))
      return next
    })

  const sweep = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    yield* Ref.update(
      bindings,
      (map) => new Map([...map].filter(([, b]) => now - b.lastUsedMs <= Duration.toMillis(IDLE))),
    )
  })
  yield* sweep.pipe(Effect.repeat(Schedule.spaced(Duration.minutes(1))), Effect.forkScoped)

  return { owns, bind, unbind }
}) satisfies Effect.Effect<unknown, never, Scope.Scope>

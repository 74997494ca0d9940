/**
 * Which peer opened each session of an HTTP MCP backend, as the serving side saw it: the `Mcp-Session-Id` a backend
 * answers a request without one with (its initialize) belongs to that request's caller, and any other caller, or a
 * session this node never saw opened, gets 404 as an unknown session does (stdio sessions are bound the same way, in
 * StdioServersLive). A session id is a bearer token to most backends; a peer that learnt one must not use it. This is
 * the 2025 era's: 2026-07-28 has no sessions.
 *
 * A session opened here for a peer is also ended here: one unused for `idle` (no request, none open), or whose peer
 * has been gone (not connected, or banned) for `peerGone`, is ended at its backend with a DELETE, as its client
 * would have, and forgotten. A client that walks away without its DELETE (most do when they crash or lose the mesh)
 * otherwise left the session, and whatever the backend keeps for it, open for ever. At most MAX_BINDINGS are kept;
 * the oldest beyond are ended the same way.
 */
import type { ServerResponse } from "node:http"
import { Clock, Duration, Effect, Ref, Schedule, type Scope } from "effect"

export const IDLE = Duration.hours(1)
export const PEER_GONE = Duration.minutes(2)
const SWEEP = Duration.minutes(1)
const MAX_BINDINGS = 10_000

/** What ending a session at its backend needs; opaque here. */
export interface Binding<T> {
  readonly caller: string
  readonly lastUsedMs: number
  /** Requests of the session being served now (an open GET stream counts). */
  readonly open: number
  /** Since when the caller has been seen gone, if it is. */
  readonly goneSinceMs?: number
  /** The protocol version the session's requests last named, for the DELETE. */
  readonly protocolVersion?: string
  readonly target: T
}

export interface Options<T> {
  /** Ends a session at its backend (a DELETE); failures are the callee's to log. */
  readonly end: (service: string, id: string, binding: Binding<T>) => Effect.Effect<void>
  /** Whether the peer is connected and not banned. */
  readonly present: (peer: string) => Effect.Effect<boolean>
  readonly idle?: Duration.Duration
  readonly peerGone?: Duration.Duration
}

/** A session the caller may not use, answered as an MCP server answers an unknown one. */
export const writeNotFound = (res: ServerResponse): void => {
  const text = JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null })
  res.writeHead(404, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const key = (service: string, id: string) => `${service}\n${id}`
const unkey = (k: string) => {
  const at = k.indexOf("\n")
  return { service: k.slice(0, at), id: k.slice(at + 1) }
}

export const make = <T>(options: Options<T>) =>
  Effect.gen(function* () {
    const idle = Duration.toMillis(options.idle ?? IDLE)
    const peerGone = Duration.toMillis(options.peerGone ?? PEER_GONE)
    const bindings = yield* Ref.make<ReadonlyMap<string, Binding<T>>>(new Map())

    const change = (service: string, id: string, f: (b: Binding<T>) => Binding<T>) =>
      Ref.update(bindings, (map) => {
        const found = map.get(key(service, id))
        return found === undefined ? map : new Map(map).set(key(service, id), f(found))
      })

    /** Whether `caller` opened the session; a use keeps the binding and notes the protocol version it names. */
    const owns = (service: string, caller: string, id: string, protocolVersion?: string): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        return yield* Ref.modify(bindings, (map): [boolean, ReadonlyMap<string, Binding<T>>] => {
          const found = map.get(key(service, id))
          if (found === undefined || found.caller !== caller) return [false, map]
          const { goneSinceMs: _, ...rest } = found
          return [
            true,
            new Map(map).set(key(service, id), {
              ...rest,
              lastUsedMs: now,
              ...(protocolVersion === undefined ? {} : { protocolVersion }),
            }),
          ]
        })
      })

    /** A request of the session being served: counted as open while it runs (an SSE stream may run for hours). */
    const using = (service: string, id: string): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        change(service, id, (b) => ({ ...b, open: b.open + 1 })),
        () =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            change(service, id, (b) => ({ ...b, open: Math.max(0, b.open - 1), lastUsedMs: now })),
          ),
      )

    /** The backend opened a session for `caller`. The oldest bindings are ended when there are too many. */
    const bind = (service: string, caller: string, id: string, target: T, protocolVersion?: string) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const evicted = yield* Ref.modify(bindings, (map) => {
          const next = new Map(map)
          // Re-inserted at the end: a Map keeps insertion order, so the first entries are the oldest bindings.
          next.delete(key(service, id))
          next.set(key(service, id), {
            caller,
            lastUsedMs: now,
            open: 0,
            target,
            ...(protocolVersion === undefined ? {} : { protocolVersion }),
          })
          const out: Array<[string, Binding<T>]> = []
          for (const [k, b] of next) {
            if (next.size <= MAX_BINDINGS) break
            next.delete(k)
            out.push([k, b])
          }
          return [out, next] as const
        })
        yield* endAll(evicted)
      })

    const unbind = (service: string, id: string): Effect.Effect<void> =>
      Ref.update(bindings, (map) => {
        const next = new Map(map)
        next.delete(key(service, id))
        return next
      })

    const endAll = (ended: ReadonlyArray<readonly [string, Binding<T>]>) =>
      Effect.forEach(
        ended,
        ([k, b]) => {
          const { service, id } = unkey(k)
          return options.end(service, id, b)
        },
        { concurrency: 8, discard: true },
      )

    /** Ends and forgets the sessions idle past `idle`, and those whose peer has been gone for `peerGone`. */
    const sweep = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const callers = new Set([...(yield* Ref.get(bindings)).values()].map((b) => b.caller))
      const gone = new Set<string>()
      for (const caller of callers) if (!(yield* options.present(caller))) gone.add(caller)
      const ended = yield* Ref.modify(bindings, (map) => {
        const next = new Map<string, Binding<T>>()
        const out: Array<[string, Binding<T>]> = []
        for (const [k, b] of map) {
          const { goneSinceMs, ...rest } = b
          const marked: Binding<T> = gone.has(b.caller) ? { ...rest, goneSinceMs: goneSinceMs ?? now } : rest
          const expired =
            (marked.open === 0 && now - marked.lastUsedMs > idle) ||
            (marked.goneSinceMs !== undefined && now - marked.goneSinceMs >= peerGone)
          if (expired) out.push([k, marked])
          else next.set(k, marked)
        }
        return [out, next] as const
      })
      yield* endAll(ended)
    })
    yield* sweep.pipe(Effect.repeat(Schedule.spaced(SWEEP)), Effect.forkScoped)

    return {
      owns,
      using,
      bind,
      unbind,
      sweep,
      /** Sessions this node relays for peers, for the gauge. */
      count: Effect.map(Ref.get(bindings), (map) => map.size),
    }
  })

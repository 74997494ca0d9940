/**
 * A 2025-era MCP session's GET stream is open at the backend before the session's next requests reach it (caller's
 * side of the proxy). A server sends its own requests (sampling, elicitation) and notifications that belong to no
 * request of the client on the session's GET stream, and drops them while that stream is not open; a client opens it
 * right after `initialize` and does not wait for it before its first tool call. Directly, the GET reaches the server
 * first because it left first; through the proxy the two travel on separate streams through two nodes, and the POST
 * could overtake the GET, so the server's request was lost and the tool call hung (the 2025 conformance suite's
 * sampling and elicitation scenarios, through the proxy only). So a request of a session waits while a GET of that
 * session, begun before it, has not had its answer's head: the peer relays that head once the backend accepted the
 * stream. The wait is capped (a backend that holds its GET answer's head back delays a request by at most WAIT).
 * The GET and the call leave the client within a millisecond on two connections, and a node whose event loop was
 * busy for that millisecond takes them in either order: so a session's first accepted notification (202, its
 * `notifications/initialized`) arms it, and its next request other than a GET waits, at most ARMED, for a GET of the
 * session to begin (a client that opens none pays that once).
 * Sessions are told apart by peer, service and `Mcp-Session-Id`; the 2026-07-28 era has neither sessions nor GET.
 */
import { Deferred, Duration, Effect, Ref } from "effect"
import type * as Forwarding from "../../domain/Forwarding.js"

/** How long a request waits for its session's GET to open. */
export const WAIT = Duration.seconds(2)
/** How long the request after a session's first notification waits for the session's GET to begin. */
export const ARMED = Duration.millis(250)
/** Sessions remembered as armed once, so a later notification does not arm them again. */
const MAX_SEEN = 10_000

/** The session a proxied MCP request belongs to, if any. */
export const sessionKey = (
  peerId: string,
  type: string,
  name: string,
  headers: Forwarding.Headers,
): string | undefined => {
  if (type !== "mcp") return undefined
  const id = headers["mcp-session-id"]
  const text = typeof id === "string" ? id : id?.join(",")
  return text === undefined || text.length === 0 ? undefined : `${peerId}/${name}\n${text}`
}

export const make = Effect.gen(function* () {
  /** The GETs of each session whose answer's head has not come, as a signal each. */
  const opening = yield* Ref.make<ReadonlyMap<string, ReadonlySet<Deferred.Deferred<void>>>>(new Map())

  /** Sessions armed once (insertion order: oldest first), each with its signal while armed. */
  const armed = yield* Ref.make<ReadonlyMap<string, Deferred.Deferred<void> | undefined>>(new Map())

  /** A session's POST was answered 202: the first time, its next request waits for a GET to begin. */
  const accepted = (key: string | undefined): Effect.Effect<void> =>
    key === undefined
      ? Effect.void
      : Effect.flatMap(Deferred.make<void>(), (signal) =>
          Ref.update(armed, (map) => {
            if (map.has(key)) return map
            const next = new Map(map).set(key, signal)
            for (const old of next.keys()) {
              if (next.size <= MAX_SEEN) break
              next.delete(old)
            }
            return next
          }),
        )

  /** Takes a session's armed signal, leaving it remembered but no longer armed. */
  const disarm = (key: string) =>
    Ref.modify(
      armed,
      (map): [Deferred.Deferred<void> | undefined, ReadonlyMap<string, Deferred.Deferred<void> | undefined>] => {
        const signal = map.get(key)
        return signal === undefined ? [undefined, map] : [signal, new Map(map).set(key, undefined)]
      },
    )

  const remove = (key: string, signal: Deferred.Deferred<void>) =>
    Ref.update(opening, (map) => {
      const rest = new Set(map.get(key))
      rest.delete(signal)
      const next = new Map(map)
      if (rest.size === 0) next.delete(key)
      else next.set(key, rest)
      return next
    })

  /**
   * Runs `open` (a GET of the session `key`, up to its answer's head) with the session's later requests held until it
   * ends, however it ends.
   */
  const opens = <A, E, R>(key: string | undefined, open: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    if (key === undefined) return open
    return Effect.acquireUseRelease(
      Effect.tap(Deferred.make<void>(), (signal) =>
        Effect.zipRight(
          Ref.update(opening, (map) => new Map(map).set(key, new Set([...(map.get(key) ?? []), signal]))),
          // A request waiting for this GET to begin now waits for its head instead.
          Effect.flatMap(disarm(key), (waiting) =>
            waiting === undefined ? Effect.void : Deferred.succeed(waiting, undefined),
          ),
        ),
      ),
      () => open,
      (signal) => Effect.zipRight(Deferred.succeed(signal, undefined), remove(key, signal)),
    )
  }

  /** Waits, up to WAIT, for the GETs of session `key` begun before now to have their answer's head. */
  const after = (key: string | undefined): Effect.Effect<void> =>
    key === undefined
      ? Effect.void
      : Effect.zipRight(
          // The request after the session's first notification: its GET may still be on the way here.
          Effect.flatMap(Ref.get(armed), (map) => {
            const signal = map.get(key)
            return signal === undefined
              ? Effect.void
              : Effect.zipRight(Effect.ignore(Effect.timeout(Deferred.await(signal), ARMED)), disarm(key))
          }),
          Effect.flatMap(Ref.get(opening), (map) => {
            const signals = map.get(key)
            if (signals === undefined) return Effect.void
            return Effect.all([...signals].map(Deferred.await), { concurrency: "unbounded", discard: true }).pipe(
              Effect.timeout(WAIT),
              Effect.ignore,
            )
          }),
        )

  return { opens, after, accepted }
})

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
 * Sessions are told apart by peer, service and `Mcp-Session-Id`; the 2026-07-28 era has neither sessions nor GET.
 */
import { Deferred, Duration, Effect, Ref } from "effect"
import type * as Forwarding from "../../domain/Forwarding.js"

/** How long a request waits for its session's GET to open. */
export const WAIT = Duration.seconds(2)

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
        Ref.update(opening, (map) => new Map(map).set(key, new Set([...(map.get(key) ?? []), signal]))),
      ),
      () => open,
      (signal) => Effect.zipRight(Deferred.succeed(signal, undefined), remove(key, signal)),
    )
  }

  /** Waits, up to WAIT, for the GETs of session `key` begun before now to have their answer's head. */
  const after = (key: string | undefined): Effect.Effect<void> =>
    key === undefined
      ? Effect.void
      : Effect.flatMap(Ref.get(opening), (map) => {
          const signals = map.get(key)
          if (signals === undefined) return Effect.void
          return Effect.all([...signals].map(Deferred.await), { concurrency: "unbounded", discard: true }).pipe(
            Effect.timeout(WAIT),
            Effect.ignore,
          )
        })

  return { opens, after }
})

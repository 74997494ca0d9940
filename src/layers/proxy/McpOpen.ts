/**
 * The serving side of a session opened where the service runs (domain/McpOpen): the initialize and its notification
 * go to the HTTP backend from this node, as the caller's own requests would (its headers, its identity), and the
 * caller's request follows in the new session. For a modern request the backend's era is asked first (`server/discover`
 * from this node, remembered for ERA_TTL): a modern backend takes the request as it is, and no session is opened. Only an allowed request gets this far: the policy and any grant of
 * single tools were checked before, and the request goes on in the form that was checked.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Clock, Duration, Effect, Ref } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import * as McpEra from "../../domain/McpEra.js"
import * as McpOpen from "../../domain/McpOpen.js"
import type * as Backend from "./Backend.js"

/** The initialize and its notification together; the caller's node waits about as long for a session of its own. */
const TIMEOUT = Duration.seconds(15)
/** An initialize answer is small; one far larger is not one. */
const MAX_ANSWER_BYTES = 256 * 1024

export interface Opened {
  /** The session's id; none from a service that keeps no sessions. */
  readonly sessionId: string | undefined
  readonly protocolVersion: string
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

/** Opens a session with the backend for the caller of `req`; the reason it could not, as text, otherwise. */
export const open = (
  exchange: Backend.Exchange,
  target: Backend.Target,
  req: IncomingMessage,
  protocolVersion: string,
): Effect.Effect<Opened, string> =>
  Effect.gen(function* () {
    const limits = { maxBytes: MAX_ANSWER_BYTES, timeout: TIMEOUT }
    const body = Buffer.from(JSON.stringify(McpOpen.initialize(protocolVersion, pkg.version)))
    const answer = yield* exchange(target, req.headers, JSON_HEADERS, body, limits)
    if (answer.status !== 200) return yield* Effect.fail(`the service answered its initialize with ${answer.status}`)
    const agreed = McpOpen.agreedVersion(String(answer.headers["content-type"] ?? ""), answer.body.toString("utf8"))
    if (agreed === undefined) return yield* Effect.fail("the service's initialize answer was not one")
    const header = answer.headers["mcp-session-id"]
    const sessionId = typeof header === "string" && header.length > 0 ? header : undefined
    const inSession = {
      ...JSON_HEADERS,
      "mcp-protocol-version": agreed,
      ...(sessionId === undefined ? {} : { "mcp-session-id": sessionId }),
    }
    const notified = yield* exchange(
      target,
      req.headers,
      inSession,
      Buffer.from(JSON.stringify(McpOpen.INITIALIZED)),
      limits,
    )
    if (notified.status >= 300) {
      return yield* Effect.fail(`the service answered the initialized notification with ${notified.status}`)
    }
    return { sessionId, protocolVersion: agreed }
  })

/**
 * No session could be opened: answered as a service answers a request without one (nothing ran), so the caller's
 * node opens one the ordinary way, and meets the service's own answer to its initialize.
 */
export const writeNotOpened = (res: ServerResponse, reason: string): void => {
  const text = JSON.stringify({
    jsonrpc: "2.0",
    error: { code: -32000, message: `Bad Request: no session; the serving node could not open one (${reason})` },
    id: null,
  })
  res.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

/** How long a backend's era, once asked, is taken as known; a backend may be replaced by one of the other era. */
export const ERA_TTL = Duration.minutes(1)
/** Backends whose era is remembered at most; past that, the oldest is forgotten. */
const MAX_ERAS = 1024

interface Known {
  readonly era: McpEra.Era
  readonly atMs: number
}

export type BackendEras = Ref.Ref<ReadonlyMap<string, Known>>

export const makeEras: Effect.Effect<BackendEras> = Ref.make<ReadonlyMap<string, Known>>(new Map())

/**
 * The era of the HTTP backend of `target` (spec 2026-07-28, server/discover): modern when its `server/discover`
 * answer names a modern version; legacy for any other answer (a 2025-era server refuses the request). A backend that
 * could not be asked is taken as legacy and not remembered.
 */
export const backendEra = (
  eras: BackendEras,
  exchange: Backend.Exchange,
  target: Backend.Target,
  req: Pick<IncomingMessage, "headers">,
): Effect.Effect<McpEra.Era> =>
  Effect.gen(function* () {
    const key = `${target.service.name} ${target.targetUrl}${target.path}`
    const now = yield* Clock.currentTimeMillis
    const known = (yield* Ref.get(eras)).get(key)
    if (known !== undefined && now - known.atMs < Duration.toMillis(ERA_TTL)) return known.era
    // Known but old: answered as known, asked again beside the request (a first call pays no local round trip).
    if (known !== undefined) {
      yield* Effect.forkDaemon(ask(eras, exchange, target, req, key, now))
      return known.era
    }
    return yield* ask(eras, exchange, target, req, key, now)
  })

const ask = (
  eras: BackendEras,
  exchange: Backend.Exchange,
  target: Backend.Target,
  req: Pick<IncomingMessage, "headers">,
  key: string,
  now: number,
): Effect.Effect<McpEra.Era> =>
  Effect.gen(function* () {
    const body = {
      jsonrpc: "2.0",
      id: McpOpen.DISCOVER_ID,
      method: "server/discover",
      params: { _meta: McpEra.envelope(undefined, { name: "mesh-node", version: pkg.version }) },
    }
    const answer = yield* Effect.either(
      exchange(target, req.headers, McpEra.requestHeaders("server/discover"), Buffer.from(JSON.stringify(body)), {
        maxBytes: MAX_ANSWER_BYTES,
        timeout: TIMEOUT,
      }),
    )
    if (answer._tag === "Left") return "legacy" as const
    const versions =
      answer.right.status === 200
        ? McpOpen.discoveredVersions(String(answer.right.headers["content-type"] ?? ""), answer.right.body.toString())
        : undefined
    const era: McpEra.Era = versions?.some(McpEra.isModernVersion) === true ? "modern" : "legacy"
    yield* Ref.update(eras, (map) => {
      const next = new Map(map)
      next.delete(key)
      next.set(key, { era, atMs: now })
      for (const oldest of next.keys()) {
        if (next.size <= MAX_ERAS) break
        next.delete(oldest)
      }
      return next
    })
    return era
  })

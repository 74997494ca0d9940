/**
 * PeerMcp over the MCP SDK client and PeerProxy.fetch. Sessions are kept by (peer, service): callers that need one
 * at the same moment share one initialize; a session found gone at the serving side (a 404: the request never ran
 * there) is dropped and opened again once, transparently; a tool call is never sent twice otherwise. Sessions unused for IDLE are
 * ended (DELETE, so the serving side frees what it holds for them, a stdio process say); at most MAX_SESSIONS are
 * kept, the longest unused closed first. A new session costs no round trip of its own: its first request asks the
 * serving node to open it there (OpenAtPeer). Where that is not done, it is opened the ordinary way, one round trip
 * before its first call (initialize): its initialized notification goes alongside that call, and no GET stream is
 * opened (`sessionFetch`). A tool call is made in the session past the SDK's client (ToolCall), on this layer's
 * deadlines.
 */
import { AsyncLocalStorage } from "node:async_hooks"
import { createHash, randomUUID } from "node:crypto"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, LATEST_PROTOCOL_VERSION, ListToolsResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Clock, Deferred, Duration, Effect, Exit, Layer, Option, Redacted, Ref, Runtime, Schedule } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import * as ListingFreshness from "../../domain/ListingFreshness.js"
import * as McpOpenHeaders from "../../domain/McpOpen.js"
import * as PeerTools from "../../domain/PeerTools.js"
import * as TraceContext from "../../http/TraceContext.js"
import * as Deadlines from "../../platform/Deadlines.js"
import { type Agent, CurrentAgent } from "../../services/agents/CurrentAgent.js"
import {
  PeerMcp,
  type PeerMcpError,
  PeerMcpError as PeerMcpErrorClass,
  type Progress,
  type RemoteResult,
  type Retry,
  type ToolList,
} from "../../services/mcp/PeerMcp.js"
import { PeerProxy, type ProxyError } from "../../services/proxy/PeerProxy.js"
import * as Eras from "./modern/Eras.js"
import * as ModernRequest from "./modern/ModernRequest.js"
import * as OpenAtPeer from "./OpenAtPeer.js"
import * as ToolCall from "./ToolCall.js"
import * as ToolPages from "./ToolPages.js"
import * as Unchecked from "./Unchecked.js"

export const IDLE = Duration.minutes(5)
export const MAX_SESSIONS = 256
const CONNECT_TIMEOUT = Duration.seconds(15)
/** A tool call may run long while it reports progress; without any, a minute of silence ends it. */
const CALL_TIMEOUT = Duration.minutes(1)
const MAX_CALL = Duration.minutes(10)
const JSON_POST: Readonly<Record<string, string>> = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
}
/** Ending a session is a courtesy to the serving side; a stopping node does not wait longer for it. */
const CLOSE_TIMEOUT = Duration.seconds(1)

interface Session {
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport
  /** A message posted in the session, past the SDK's client (ToolCall). */
  readonly post: ToolCall.Post
}

interface Slot {
  readonly session: Deferred.Deferred<Session, PeerMcpError>
  readonly lastUsedMs: number
  /** Exchanges under way on the session. */
  readonly busy: number
}

/** PeerProxy refused or failed (before the request went out, or after: `delivered`); carried through the SDK as is. */
class ProxyFailure extends Error {
  constructor(readonly failure: ProxyError) {
    super(failure.message)
  }
}

/**
 * The serving side no longer knows the session, or opened none for the request (which did not run): open a new one
 * and try again; `ordinary`: with an initialize of this node's own.
 */
class Gone {
  readonly _tag = "Gone"
  constructor(readonly ordinary = false) {}
}

const fail = (reason: PeerMcpError["reason"], message: string) => new PeerMcpErrorClass({ reason, message })

const shorten = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 300)

/** The readable part of an HTTP error the SDK reports: the mesh error body's message, or a JSON-RPC error's. */
/** The stable error code of a node's error body (`{"error": "...", ...}`), if the answer carried one. */
const bodyCode = (error: StreamableHTTPError): string | undefined => {
  const text = error.message
  const start = text.indexOf("{")
  if (start === -1) return undefined
  try {
    const code = (JSON.parse(text.slice(start)) as { error?: unknown }).error
    return typeof code === "string" ? code : undefined
  } catch {
    return undefined
  }
}

const bodyMessage = (error: StreamableHTTPError): string => {
  const text = error.message
  const start = text.indexOf("{")
  if (start !== -1) {
    try {
      const body = JSON.parse(text.slice(start)) as { message?: unknown; error?: { message?: unknown } }
      if (typeof body.message === "string") return shorten(body.message)
      if (typeof body.error?.message === "string") return shorten(body.error.message)
    } catch {
      // Not JSON: the text as it is.
    }
  }
  return shorten(text.replace(/^Streamable HTTP error: /, ""))
}

/** A call that failed after it was sent: not "unreachable", which callers retry; it may have run once already. */
const mayHaveRun = (message: string): PeerMcpError =>
  fail("failed", `${message} (the call was sent and may have run; it was not repeated)`)

/**
 * What went wrong, as a PeerMcpError; `Gone` when a session we had is unknown at the serving side (a 404: the request
 * was turned away before it ran). `replayable`: the exchange may be made again after it was sent (a listing); a tool
 * call may not, so the session closing under it (it was sent, and may have run) is a failure, not `Gone`.
 */
const classify = (error: unknown, established: boolean, replayable = true): PeerMcpError | Gone => {
  if (error instanceof OpenAtPeer.NotOpened) return new Gone(true)
  if (error instanceof TooLarge) return fail("failed", error.message)
  if (error instanceof ToolCall.NoResult) return mayHaveRun(error.message)
  if (error instanceof ProxyFailure) {
    const failure = error.failure
    if (failure._tag === "Forbidden") return fail("refused", failure.message)
    if (failure._tag !== "BadGateway") return fail("failed", failure.message)
    return failure.delivered === true && !replayable
      ? mayHaveRun(failure.message)
      : fail("unreachable", failure.message)
  }
  if (error instanceof StreamableHTTPError) {
    const message = bodyMessage(error)
    if (error.code === 404) return established ? new Gone() : fail("not_found", message)
    if (error.code === 403) return fail("refused", message)
    // The serving node's 502 and 504 come after its backend had the request (it may have run), unless it says the
    // backend was never reached; 503 turns it away.
    const reached = error.code === 504 || (error.code === 502 && bodyCode(error) !== "backend_unreachable")
    if (reached && !replayable) return mayHaveRun(message)
    if (error.code === 502 || error.code === 503 || error.code === 504) return fail("unreachable", message)
    return fail("failed", (error.code ?? 0) > 0 ? `HTTP ${error.code}: ${message}` : message)
  }
  if (error instanceof McpError) {
    if (error.code === ErrorCode.ConnectionClosed && established) {
      return replayable ? new Gone() : fail("failed", "the MCP session ended while the call was under way")
    }
    if (error.code === ErrorCode.RequestTimeout) return fail("failed", "the server did not answer in time")
    return fail("failed", `the server answered with an error: ${shorten(error.message)}`)
  }
  return fail("failed", shorten(error instanceof Error ? error.message : String(error)) || "failed")
}

/** Whether a request body is the `notifications/initialized` notification. */
const isInitialized = (body: unknown): boolean => {
  if (typeof body !== "string" || !body.includes("notifications/initialized")) return false
  try {
    const message = JSON.parse(body) as { method?: unknown; id?: unknown }
    return message.method === "notifications/initialized" && message.id === undefined
  } catch {
    return false
  }
}

/** An answer outgrew the cap on a peer's response; never retried, the next answer would be as large. */
class TooLarge extends Error {}

/**
 * What an exchange's requests need while the SDK client works on its behalf: they reach `meshFetch` through the
 * SDK's own promises, outside any fiber. The caller's span, which they continue, and where to report an answer cut
 * off at the cap: the SDK swallows an event stream's failure (it waits for a reconnection the server never offers),
 * so the exchange is failed from here.
 */
interface Caller {
  readonly traceparent: string | undefined
  readonly onTooLarge: (message: string) => void
}
const caller = new AsyncLocalStorage<Caller>()

/** `effect` as a child of the caller's span, when the request was made inside one. */
const continuing = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  const traceparent = caller.getStore()?.traceparent
  const parent = traceparent === undefined ? Option.none() : TraceContext.parentOf({ traceparent })
  return Option.isSome(parent) ? Effect.withParentSpan(effect, parent.value) : effect
}

/** A token's key among the sessions: never the token itself, which a key could leak into a log or a dump. */
const tokenKey = (agent: Agent) =>
  createHash("sha256").update(Redacted.value(agent.token)).digest("base64url").slice(0, 22)

export interface Limits {
  /** Sessions kept at most; the longest unused is ended to make room. */
  readonly maxSessions: number
  /** A session unused this long is ended. */
  readonly idle: Duration.Duration
}

const make = ({ maxSessions, idle }: Limits) =>
  Effect.gen(function* () {
    const proxy = yield* PeerProxy
    const scope = yield* Effect.scope
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runFork(runtime)
    const runExit = Runtime.runPromiseExit(runtime)
    const slots = yield* Ref.make<ReadonlyMap<string, Slot>>(new Map())
    const eras = yield* Eras.make
    /** Services whose era a call is finding out now, and what the calls made meanwhile wait on. */
    const probing = yield* Ref.make<ReadonlyMap<string, Deferred.Deferred<void>>>(new Map())
    const callLimits: ToolCall.Limits = {
      deadlines: yield* Deadlines.make(Deadlines.tickFor([CALL_TIMEOUT])),
      quiet: CALL_TIMEOUT,
      total: MAX_CALL,
    }

    /** The peer's service over the proxy path; the URL is a placeholder, the path below the service is empty. */
    const meshFetch =
      (peerId: string, service: string, agent: Agent | undefined): FetchLike =>
      (_url, init) => {
        const onTooLarge = caller.getStore()?.onTooLarge
        const withCap = {
          ...init,
          ...(onTooLarge === undefined ? {} : { onTooLarge }),
          ...(agent === undefined ? {} : { agent }),
        }
        return runExit(continuing(proxy.fetch(peerId, "mcp", service, "", withCap))).then((exit) => {
          if (Exit.isSuccess(exit)) return exit.value
          const failure = Cause.failureOption(exit.cause)
          throw Option.isSome(failure) ? new ProxyFailure(failure.value) : new Error("the mesh request failed")
        })
      }

    const end = (session: Session) =>
      Effect.promise(() => session.transport.terminateSession().catch(() => undefined)).pipe(
        Effect.timeout(CLOSE_TIMEOUT),
        Effect.ignore,
        Effect.zipRight(Effect.promise(() => session.client.close().catch(() => undefined))),
      )

    /** Forgets the slot (if it is still this one) and ends its session. */
    const drop = (key: string, slot: Slot) =>
      Effect.gen(function* () {
        const removed = yield* Ref.modify(slots, (map): [boolean, ReadonlyMap<string, Slot>] => {
          if (map.get(key)?.session !== slot.session) return [false, map]
          const next = new Map(map)
          next.delete(key)
          return [true, next]
        })
        if (!removed) return
        const done = yield* Deferred.poll(slot.session)
        if (done._tag === "None") return
        const exit = yield* Effect.exit(done.value)
        if (Exit.isSuccess(exit)) yield* end(exit.value)
      })

    /**
     * The session's requests, with two round trips less before its first call. The `notifications/initialized`
     * notification is sent, and its 202 not waited for: the spec lets requests follow as soon as initialize is
     * answered, and the SDKs' servers take them then. If it fails the session is retired: later calls open a new one,
     * and it is ended once the exchanges already on it are surely over. The GET stream for messages the server sends
     * unasked is not opened (answered 405 here, as a server without one would): nothing here listens for them, and on
     * the peer it would hold a stream for the session's whole life.
     */
    const sessionFetch = (base: FetchLike, onAnnounceFailed: () => void): FetchLike => {
      return (url, init) => {
        if (init?.method === "GET") return Promise.resolve(new Response(null, { status: 405 }))
        if (init?.method !== "POST" || !isInitialized(init.body)) return base(url, init)
        base(url, init).then(
          async (response) => {
            await response.body?.cancel().catch(() => undefined)
            if (!response.ok) onAnnounceFailed()
          },
          () => onAnnounceFailed(),
        )
        return Promise.resolve(new Response(null, { status: 202 }))
      }
    }

    const connect = (
      peerId: string,
      service: string,
      agent: Agent | undefined,
      onClosed: () => void,
      onAnnounceFailed: () => void,
      ordinary: boolean,
      adopted?: OpenAtPeer.Opened,
    ) =>
      Effect.gen(function* () {
        const client = new Client(
          { name: "mesh-node", version: pkg.version },
          { capabilities: {}, jsonSchemaValidator: Unchecked.schemas },
        )
        const url = new URL(`http://mesh.invalid/mesh/${peerId}/mcp/${service}`)
        const base = meshFetch(peerId, service, agent)
        // The session is opened by its first request, at the serving node (OpenAtPeer): no initialize from here. Once
        // one was not, it is opened the ordinary way.
        let transport: StreamableHTTPClientTransport
        let post: ToolCall.Post
        if (ordinary) {
          transport = new StreamableHTTPClientTransport(url, { fetch: sessionFetch(base, onAnnounceFailed) })
          // The id and version the transport learned from the initialize, as it sends them itself.
          post = (body, signal) => {
            const headers: Record<string, string> = { ...JSON_POST }
            if (transport.sessionId !== undefined) headers["mcp-session-id"] = transport.sessionId
            if (transport.protocolVersion !== undefined) headers["mcp-protocol-version"] = transport.protocolVersion
            return base(url, { method: "POST", headers, body, ...(signal === undefined ? {} : { signal }) })
          }
        } else {
          const opening = new OpenAtPeer.Opening(base, (version) => transport.setProtocolVersion(version), adopted)
          transport = new StreamableHTTPClientTransport(url, { fetch: opening.fetch, sessionId: OpenAtPeer.PENDING })
          if (adopted !== undefined) transport.setProtocolVersion(adopted.version)
          post = (body, signal) =>
            opening.fetch(url, {
              method: "POST",
              headers: JSON_POST,
              body,
              ...(signal === undefined ? {} : { signal }),
            })
        }
        yield* Effect.tryPromise({
          try: (signal) => client.connect(transport, { signal, timeout: Duration.toMillis(CONNECT_TIMEOUT) }),
          catch: (error) => {
            const failure = classify(error, false)
            return failure instanceof Gone ? fail("unreachable", "the session ended as it opened") : failure
          },
        }).pipe(
          Effect.timeoutFail({
            duration: CONNECT_TIMEOUT,
            onTimeout: () => fail("unreachable", `no MCP session with ${service} on peer ${peerId} within 15s`),
          }),
          Effect.tapError(() => Effect.promise(() => client.close().catch(() => undefined))),
        )
        // The transport closed under us (closed here, or failed for good): the session is gone.
        client.onclose = onClosed
        return { client, transport, post }
      })

    /**
     * The slot of the peer's service, counted busy; a new one starts its initialize in the layer's scope, so that
     * callers that give up waiting do not abandon it for the others.
     */
    // An agent's exchanges go in sessions of their own, carrying its token: the serving side scopes them.
    const slotKey = (peerId: string, service: string, agent: Agent | undefined) =>
      agent === undefined ? `${peerId}/${service}` : `${peerId}/${service}#${tokenKey(agent)}`

    /** Makes room for a new slot and opens its session in the layer's scope; the slot is forgotten if that fails. */
    const startOpening = (
      key: string,
      slot: Slot,
      peerId: string,
      service: string,
      agent: Agent | undefined,
      ordinary: boolean,
      adopted?: OpenAtPeer.Opened,
    ) =>
      Effect.gen(function* () {
        yield* makeRoom(key)
        const open = connect(
          peerId,
          service,
          agent,
          () => run(drop(key, slot)),
          () => run(retire(key, slot)),
          ordinary,
          adopted,
        ).pipe(
          Effect.exit,
          Effect.tap((exit) => Deferred.done(slot.session, exit)),
          Effect.tap((exit) => (Exit.isFailure(exit) ? forget(key, slot) : Effect.void)),
        )
        yield* Effect.forkIn(open, scope)
      })

    /**
     * Keeps a session the serving node opened for a modern request to a service that turned out legacy (the request
     * ran in it), as the caller's session with that service; false when there is one already (this one is then ended).
     */
    const adopt = (peerId: string, service: string, agent: Agent | undefined, opened: OpenAtPeer.Opened) =>
      Effect.gen(function* () {
        const key = slotKey(peerId, service, agent)
        const now = yield* Clock.currentTimeMillis
        const fresh = yield* Deferred.make<Session, PeerMcpError>()
        const slot: Slot = { session: fresh, lastUsedMs: now, busy: 0 }
        const created = yield* Ref.modify(slots, (map): [boolean, ReadonlyMap<string, Slot>] =>
          map.has(key) ? [false, map] : [true, new Map(map).set(key, slot)],
        )
        if (!created) return false
        yield* startOpening(key, slot, peerId, service, agent, false, opened)
        return true
      })

    const take = (peerId: string, service: string, agent: Agent | undefined, ordinary: boolean) =>
      Effect.gen(function* () {
        const key = slotKey(peerId, service, agent)
        const now = yield* Clock.currentTimeMillis
        const fresh = yield* Deferred.make<Session, PeerMcpError>()
        const [slot, created] = yield* Ref.modify(slots, (map): [[Slot, boolean], ReadonlyMap<string, Slot>] => {
          const found = map.get(key)
          const next: Slot =
            found === undefined
              ? { session: fresh, lastUsedMs: now, busy: 1 }
              : { ...found, lastUsedMs: now, busy: found.busy + 1 }
          return [[next, found === undefined], new Map(map).set(key, next)]
        })
        if (created) yield* startOpening(key, slot, peerId, service, agent, ordinary)
        return { key, slot }
      })

    /**
     * A session that may not be usable (its initialized notification failed): later calls open a new one, and it is
     * ended once no exchange on it can still be under way, since ending it would cut them off mid-call.
     */
    const retire = (key: string, slot: Slot) =>
      Effect.gen(function* () {
        yield* forget(key, slot)
        const exit = yield* Deferred.await(slot.session).pipe(Effect.exit)
        if (Exit.isFailure(exit)) return
        // Ended when the wait is over, or when the layer's scope closes first.
        yield* Effect.sleep(MAX_CALL).pipe(Effect.ensuring(end(exit.value)), Effect.forkIn(scope))
      })

    /** Removes the slot if it is still the one for its key. */
    const forget = (key: string, slot: Slot) =>
      Ref.update(slots, (map) => {
        if (map.get(key)?.session !== slot.session) return map
        const next = new Map(map)
        next.delete(key)
        return next
      })

    const release = (key: string, slot: Slot) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.update(slots, (map) => {
          const found = map.get(key)
          if (found?.session !== slot.session) return map
          return new Map(map).set(key, { ...found, lastUsedMs: now, busy: Math.max(0, found.busy - 1) })
        }),
      )

    /** Closes the longest unused sessions beyond maxSessions (never `keep`, never a busy one). */
    const makeRoom = (keep: string) =>
      Effect.gen(function* () {
        const map = yield* Ref.get(slots)
        const excess = map.size - maxSessions
        if (excess <= 0) return
        const idlest = [...map.entries()]
          .filter(([key, slot]) => key !== keep && slot.busy === 0)
          .sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs)
          .slice(0, excess)
        yield* Effect.forEach(idlest, ([key, slot]) => drop(key, slot), { discard: true })
      })

    /**
     * Runs an exchange on the session of the caller (the peer's service, and the agent the call is made for, if any);
     * a session the serving side forgot is replaced once.
     */
    const use = <A>(
      peerId: string,
      service: string,
      replayable: boolean,
      exchange: (session: Session, signal: AbortSignal) => Promise<A>,
    ): Effect.Effect<A, PeerMcpError> =>
      Effect.flatMap(Effect.serviceOption(CurrentAgent), (agent) =>
        useAs(peerId, service, Option.getOrUndefined(agent), replayable, exchange),
      )

    const useAs = <A>(
      peerId: string,
      service: string,
      agent: Agent | undefined,
      replayable: boolean,
      exchange: (session: Session, signal: AbortSignal) => Promise<A>,
    ): Effect.Effect<A, PeerMcpError> => {
      const attempt = (ordinary: boolean) =>
        Effect.acquireUseRelease(
          take(peerId, service, agent, ordinary),
          ({ key, slot }) =>
            Effect.flatMap(Effect.zip(Deferred.await(slot.session), TraceContext.current), ([session, traceparent]) =>
              Effect.tryPromise({
                try: (signal) =>
                  new Promise<A>((resolve, reject) => {
                    // Aborting the exchange's own signal cancels the request at the serving side as well.
                    const controller = new AbortController()
                    const abort = () => controller.abort(signal.reason)
                    signal.addEventListener("abort", abort, { once: true })
                    const onTooLarge = (message: string) => {
                      reject(new TooLarge(message))
                      controller.abort(new TooLarge(message))
                    }
                    caller
                      .run({ traceparent: Option.getOrUndefined(traceparent), onTooLarge }, () =>
                        exchange(session, controller.signal),
                      )
                      .then(resolve, reject)
                      .finally(() => signal.removeEventListener("abort", abort))
                  }),
                catch: (error) => classify(error, true, replayable),
              }),
            ).pipe(Effect.tapError((error) => (error instanceof Gone ? drop(key, slot) : Effect.void))),
          ({ key, slot }) => release(key, slot),
        )
      const gone = (error: PeerMcpError | Gone): error is Gone => error instanceof Gone
      // A session that ended is opened again once; a serving node that opened none is not counted as one ending.
      const tries = (ordinary: boolean, ended: number): Effect.Effect<A, PeerMcpError> =>
        attempt(ordinary).pipe(
          Effect.catchIf(gone, (error) => {
            if (error.ordinary && !ordinary) return tries(true, ended)
            if (ended === 0) return tries(ordinary, 1)
            return Effect.fail(fail("unreachable", `the MCP session with ${service} on peer ${peerId} keeps ending`))
          }),
        )
      return tries(false, 0)
    }

    /**
     * A modern exchange: self-describing requests on their own, no session. `open`: the serving node is also asked to
     * open a 2025-era session for the request if its service is legacy (domain/McpOpen); `legacySession` then says it
     * did (the request ran in it), and the session is kept as the caller's session with the service (`adopt`).
     */
    const modern = <A>(
      peerId: string,
      service: string,
      agent: Agent | undefined,
      open: boolean,
      replayable: boolean,
      exchange: (post: ToolCall.Post, signal: AbortSignal) => Promise<A>,
      /** Told, once the answer's headers are in, what they show: a legacy session opened, success, or neither. */
      onHeaders: (shown: "opened" | "ok" | "other") => Effect.Effect<void> = () => Effect.void,
    ) =>
      Effect.gen(function* () {
        const url = `http://mesh.invalid/mesh/${peerId}/mcp/${service}`
        const base = meshFetch(peerId, service, agent)
        const opened = yield* Ref.make<OpenAtPeer.Opened | undefined>(undefined)
        // A session opened for us is kept as our session with the service, or ended if we have one.
        const keep = (session: OpenAtPeer.Opened) =>
          Effect.gen(function* () {
            yield* Ref.set(opened, session)
            if ((yield* adopt(peerId, service, agent, session)) || session.id === undefined) return
            const headers = { "mcp-session-id": session.id, "mcp-protocol-version": session.version }
            yield* Effect.promise(() =>
              base(url, { method: "DELETE", headers }).then(
                (response) => response.body?.cancel().catch(() => undefined),
                () => undefined,
              ),
            ).pipe(Effect.timeout(CLOSE_TIMEOUT), Effect.ignore, Effect.forkIn(scope))
          })
        const post: ToolCall.Post = (body, signal, headers) =>
          base(url, {
            method: "POST",
            headers: headers ?? JSON_POST,
            body,
            ...(signal === undefined ? {} : { signal }),
            ...(open ? { openMcpSession: LATEST_PROTOCOL_VERSION } : {}),
          }).then(async (response) => {
            const version = McpOpenHeaders.version(response.headers.get(McpOpenHeaders.OPENED))
            const session =
              version === undefined ? undefined : { id: response.headers.get("mcp-session-id") ?? undefined, version }
            const told = onHeaders(session !== undefined ? "opened" : response.ok ? "ok" : "other")
            // A call to a service of known era has nothing to do here: no fiber is run for it.
            if (session !== undefined || told !== Effect.void) {
              await runExit(Effect.zipRight(session === undefined ? Effect.void : keep(session), told))
            }
            return response
          })
        const traceparent = yield* TraceContext.current
        const exit = yield* Effect.tryPromise({
          try: (signal) =>
            new Promise<A>((resolve, reject) => {
              const controller = new AbortController()
              const abort = () => controller.abort(signal.reason)
              signal.addEventListener("abort", abort, { once: true })
              const onTooLarge = (message: string) => {
                reject(new TooLarge(message))
                controller.abort(new TooLarge(message))
              }
              caller
                .run({ traceparent: Option.getOrUndefined(traceparent), onTooLarge }, () =>
                  exchange(post, controller.signal),
                )
                .then(resolve, reject)
                .finally(() => signal.removeEventListener("abort", abort))
            }),
          catch: (error) => (error instanceof ToolCall.LegacyAnswer ? error : classify(error, false, replayable)),
        }).pipe(Effect.exit)
        return { exit, legacySession: (yield* Ref.get(opened)) !== undefined }
      })

    /** The answer showed a legacy service: remembered, and the exchange made again in a session (it did not run). */
    const isLegacy = <A>(exit: Exit.Exit<A, PeerMcpError | Gone | ToolCall.LegacyAnswer>): boolean =>
      Exit.isFailure(exit) &&
      Option.exists(Cause.failureOption(exit.cause), (error) => error instanceof ToolCall.LegacyAnswer)

    const settled = <A>(
      exit: Exit.Exit<A, PeerMcpError | Gone | ToolCall.LegacyAnswer>,
    ): Effect.Effect<A, PeerMcpError> =>
      Effect.catchAll(exit, (error) =>
        error instanceof PeerMcpErrorClass
          ? Effect.fail(error)
          : Effect.fail(fail("failed", error instanceof Gone ? "the MCP session ended" : error.message)),
      )

    /** A 2025-era listing: no caching hint (the era has none). */
    const legacyList = (peerId: string, service: string) =>
      use(peerId, service, true, ({ client }, signal) =>
        ToolPages.list(client, signal, PeerTools.listed).then((tools): ToolList => ({ tools })),
      )

    const listTools = (peerId: string, service: string, timeout: Duration.DurationInput) =>
      Effect.gen(function* () {
        const key = `${peerId}/${service}`
        if ((yield* Eras.get(eras, key)) === "legacy") return yield* legacyList(peerId, service)
        const agent = Option.getOrUndefined(yield* Effect.serviceOption(CurrentAgent))
        const { exit } = yield* modern(peerId, service, agent, false, true, async (post, signal) => {
          // Each page carries its own ttlMs; the listing is as fresh as its least fresh page.
          let ttlMs: number | undefined
          const tools = await ToolPages.list(
            {
              listTools: async (params, options) => {
                const result = await ModernRequest.send(
                  post,
                  `mesh-${randomUUID()}`,
                  "tools/list",
                  params,
                  options.signal,
                )
                ttlMs = ListingFreshness.least(ttlMs, result.ttlMs)
                return ListToolsResultSchema.parse(result)
              },
            },
            signal,
            PeerTools.listed,
          )
          return { tools, ttlMs } satisfies ToolList
        })
        if (isLegacy(exit)) {
          yield* Eras.set(eras, key, "legacy")
          return yield* legacyList(peerId, service)
        }
        if (Exit.isSuccess(exit)) yield* Eras.set(eras, key, "modern")
        return yield* settled(exit)
      }).pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () => fail("unreachable", `${service} on peer ${peerId} did not list its tools in time`),
        }),
      )

    const legacyCall = (
      peerId: string,
      service: string,
      tool: string,
      args: Readonly<Record<string, unknown>>,
      onProgress: ((progress: Progress) => void) | undefined,
    ) =>
      use(peerId, service, false, ({ post }, signal) =>
        ToolCall.limited(
          callLimits,
          post,
          { id: `mesh-${randomUUID()}`, tool, args, ...(onProgress === undefined ? {} : { onProgress }) },
          signal,
        ),
      )

    /**
     * A modern service gets the call on its own; one not known yet gets it too, with the serving node asked to open a
     * session if its service turns out legacy (so the first call is one request either way); a legacy one gets it in
     * its session. A retry (input_required answered) goes only to a modern service.
     */
    const callTool = (
      peerId: string,
      service: string,
      tool: string,
      args: Readonly<Record<string, unknown>>,
      onProgress?: (progress: Progress) => void,
      retry?: Retry,
    ): Effect.Effect<RemoteResult, PeerMcpError> =>
      Effect.gen(function* () {
        const key = `${peerId}/${service}`
        const era = yield* Eras.get(eras, key)
        const answering = retry?.inputResponses !== undefined || retry?.requestState !== undefined
        // Made only when needed: an error captures a stack trace, a cost every call would pay.
        const unanswerable = Effect.suspend(() =>
          Effect.fail(
            fail("failed", `${service} on peer ${peerId} is a 2025-era server: it takes no input_required answers`),
          ),
        )
        if (era === "legacy") {
          if (answering) return yield* unanswerable
          return yield* legacyCall(peerId, service, tool, args, onProgress)
        }
        // The era unknown, one call finds it out; calls made meanwhile wait for the answer's headers, not its end.
        const fresh = yield* Deferred.make<void>()
        const probe =
          era === undefined
            ? yield* Ref.modify(
                probing,
                (map): [Deferred.Deferred<void> | "mine", ReadonlyMap<string, Deferred.Deferred<void>>] => {
                  const found = map.get(key)
                  return found === undefined ? ["mine", new Map(map).set(key, fresh)] : [found, map]
                },
              )
            : undefined
        if (probe !== undefined && probe !== "mine") {
          yield* Deferred.await(probe)
          return yield* callTool(peerId, service, tool, args, onProgress, retry)
        }
        const done = Effect.zipRight(
          Ref.update(probing, (map) => {
            if (map.get(key) !== fresh) return map
            const next = new Map(map)
            next.delete(key)
            return next
          }),
          Deferred.succeed(fresh, undefined),
        )
        const agent = Option.getOrUndefined(yield* Effect.serviceOption(CurrentAgent))
        const call: ToolCall.Call = {
          id: `mesh-${randomUUID()}`,
          tool,
          args,
          modern: true,
          ...(onProgress === undefined ? {} : { onProgress }),
          ...(retry === undefined ? {} : { retry }),
        }
        const { exit, legacySession } = yield* modern(
          peerId,
          service,
          agent,
          era === undefined,
          false,
          (post, signal) => ToolCall.limited(callLimits, post, call, signal),
          (shown) =>
            shown === "other" || probe === undefined
              ? Effect.void
              : Effect.zipRight(Eras.set(eras, key, shown === "opened" ? "legacy" : "modern"), done),
        ).pipe(Effect.ensuring(probe === "mine" ? done : Effect.void))
        if (legacySession) return yield* settled(exit)
        if (isLegacy(exit)) {
          yield* Eras.set(eras, key, "legacy")
          if (answering) return yield* unanswerable
          return yield* legacyCall(peerId, service, tool, args, onProgress)
        }
        return yield* settled(exit)
      })

    const sweep = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const unused = [...(yield* Ref.get(slots)).entries()].filter(
        ([, slot]) => slot.busy === 0 && now - slot.lastUsedMs > Duration.toMillis(idle),
      )
      yield* Effect.forEach(unused, ([key, slot]) => drop(key, slot), { discard: true })
    })
    yield* sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("closing idle MCP sessions with peers failed", cause)),
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped,
    )
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Ref.get(slots), (map) =>
        Effect.forEach([...map.entries()], ([key, slot]) => drop(key, slot), {
          concurrency: "unbounded",
          discard: true,
        }),
      ),
    )

    return PeerMcp.of({
      listTools,
      callTool,
      sessions: Effect.map(Ref.get(slots), (map) => map.size),
    })
  })

export const layerWith = (limits: Limits) => Layer.scoped(PeerMcp, make(limits))

export const layer = layerWith({ maxSessions: MAX_SESSIONS, idle: IDLE })

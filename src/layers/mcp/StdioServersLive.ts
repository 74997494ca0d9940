/**
 * StdioServers: a registry of bridged sessions (Bridge.ts, one process each) and of process slots per service. A
 * request without a session must be an initialize: it takes a slot (one peer holds at most `callerShare` of them),
 * starts a process and opens a session, which only the peer that opened it may use afterwards (another peer gets
 * 404, as for an unknown session). A session ends when its caller deletes it, after IDLE without a request (none
 * being served), or when its process cannot be kept running; its slot is free again then. Every process stops with
 * the layer, that is when the node stops.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Duration, Effect, Layer, Ref, Schedule, Scope } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import { BadGateway, BadRequest, PayloadTooLarge, RateLimited, Unavailable } from "../../domain/Errors.js"
import * as McpEra from "../../domain/McpEra.js"
import * as McpGrant from "../../domain/McpGrant.js"
import { DEFAULT_MAX_PROCESSES, type ServiceSpec } from "../../domain/NodeFile.js"
import { MAX_KEY_LENGTH } from "../../domain/ServiceKeys.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import { describe } from "../../platform/Describe.js"
import { StdioServers } from "../../services/mcp/StdioServers.js"
import * as Bridge from "./stdio/Bridge.js"
import * as McpProcess from "./stdio/McpProcess.js"
import * as ModernPool from "./stdio/ModernPool.js"
import * as ToolPages from "./ToolPages.js"
import * as Unchecked from "./Unchecked.js"

/** A session with no request for this long is closed (the caller's node closes its own sooner). */
export const IDLE = Duration.minutes(10)
/** Largest initialize request taken. */
const MAX_INITIALIZE_BYTES = 1024 * 1024
/** A probe's process must start, initialize and list its tools within this. */
export const PROBE_TIMEOUT = Duration.seconds(30)
/** A tool list this fresh stands: a program's start-up is too dear to pay every minute. */
export const PROBE_KEEP = Duration.minutes(10)

interface Slots {
  readonly total: ReadonlyMap<string, number>
  readonly byCaller: ReadonlyMap<string, number>
}

/**
 * The processes of a service one caller may hold at once: half of them, rounded up, so that no single peer can keep
 * every other caller out of a service that runs more than one.
 */
export const callerShare = (limit: number): number => Math.ceil(limit / 2)

const decrement = (map: ReadonlyMap<string, number>, key: string): ReadonlyMap<string, number> => {
  const next = new Map(map)
  const used = (map.get(key) ?? 1) - 1
  if (used > 0) next.set(key, used)
  else next.delete(key)
  return next
}

type Checked = { readonly grant: McpGrant.Grant; readonly message?: unknown }

interface Entry {
  readonly bridge: Bridge.Bridge
  readonly lastUsedMs: number
  /** Requests of the session being served (a GET stream not counted). */
  readonly busy: number
}

/** An MCP-level refusal, shaped as the SDK's own server answers it. */
const rpcError = (res: ServerResponse, status: number, message: string) => {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null })
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

/** The request body as JSON, read up to MAX_INITIALIZE_BYTES. */
const readJson = (req: IncomingMessage): Effect.Effect<unknown, BadRequest | PayloadTooLarge> =>
  Effect.async<Buffer, BadRequest | PayloadTooLarge>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > MAX_INITIALIZE_BYTES) {
        req.off("data", onData)
        req.resume()
        return resume(Effect.fail(new PayloadTooLarge({ message: "an initialize request must be under 1 MiB" })))
      }
      chunks.push(chunk)
    }
    req.on("data", onData)
    req.once("end", () => resume(Effect.succeed(Buffer.concat(chunks))))
    req.once("error", () => resume(Effect.fail(new BadRequest({ message: "the request body was cut off" }))))
  }).pipe(
    Effect.flatMap((body) =>
      Effect.try({
        try: () => JSON.parse(body.toString("utf8")) as unknown,
        catch: () => new BadRequest({ message: "the request body is not JSON" }),
      }),
    ),
  )

const isInitialize = (body: unknown) =>
  Array.isArray(body) ? body.some((message) => isInitializeRequest(message)) : isInitializeRequest(body)

export const layer = Layer.scoped(
  StdioServers,
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const sessions = yield* Ref.make<ReadonlyMap<string, Entry>>(new Map())
    /** Processes running per service, and per service and caller (`<service> <caller>`; probes have no caller). */
    const slots = yield* Ref.make<Slots>({ total: new Map(), byCaller: new Map() })
    /** The tool names each service listed last, and when. */
    const known = yield* Ref.make<
      ReadonlyMap<string, { readonly names: ReadonlyArray<string>; readonly atMs: number }>
    >(new Map())

    const limitOf = (spec: ServiceSpec) => spec.max_processes ?? DEFAULT_MAX_PROCESSES
    /** The era each service's server speaks, as its `server/discover` showed (asked once per program run here). */
    const eras = yield* Ref.make<ReadonlyMap<string, McpEra.Era>>(new Map())

    /**
     * Takes one of the service's process slots: "full" when none is free, "share" when the caller already holds its
     * share of them.
     */
    const takeSlot = (spec: ServiceSpec, caller?: string) =>
      Ref.modify(slots, (state): ["taken" | "full" | "share", Slots] => {
        const used = state.total.get(spec.name) ?? 0
        if (used >= limitOf(spec)) return ["full", state]
        const key = `${spec.name} ${caller}`
        const held = caller === undefined ? 0 : (state.byCaller.get(key) ?? 0)
        if (caller !== undefined && held >= callerShare(limitOf(spec))) return ["share", state]
        return [
          "taken",
          {
            total: new Map(state.total).set(spec.name, used + 1),
            byCaller: caller === undefined ? state.byCaller : new Map(state.byCaller).set(key, held + 1),
          },
        ]
      })

    const freeSlot = (name: string, caller?: string) =>
      Ref.update(slots, (state) => ({
        total: decrement(state.total, name),
        byCaller: caller === undefined ? state.byCaller : decrement(state.byCaller, `${name} ${caller}`),
      }))

    const pool = yield* ModernPool.make({
      take: (spec, caller) => takeSlot(spec, caller),
      free: (n, c) => freeSlot(n, c),
    })

    /** The service's era: asked of a process of its own (in a slot) the first time; legacy if it cannot be asked. */
    const eraOf = (spec: ServiceSpec) =>
      Effect.gen(function* () {
        const known = (yield* Ref.get(eras)).get(spec.name)
        if (known !== undefined) return known
        if ((yield* takeSlot(spec)) !== "taken") return "legacy" as const
        const era = yield* ModernPool.discover(spec).pipe(
          Effect.orElseSucceed(() => "legacy" as const),
          Effect.ensuring(freeSlot(spec.name)),
        )
        yield* Ref.update(eras, (map) => new Map(map).set(spec.name, era))
        return era
      })

    /** A modern request, without a session: served from the pool if the server is modern. */
    const serveModern = (spec: ServiceSpec, caller: string, req: IncomingMessage, res: ServerResponse, mcp?: Checked) =>
      Effect.gen(function* () {
        if ((yield* eraOf(spec)) !== "modern") {
          return rpcError(res, 400, "Bad Request: no session; send initialize first")
        }
        const body = mcp !== undefined && mcp.message !== undefined ? mcp.message : yield* readJson(req)
        const limit = limitOf(spec)
        yield* pool.serve(spec, caller, body, mcp?.grant ?? McpGrant.SERVICE, res, req).pipe(
          Effect.mapError((why): Unavailable | RateLimited =>
            why === "full"
              ? new Unavailable({ message: `the mcp service ${spec.name} runs at most ${limit} processes, all in use` })
              : new RateLimited({
                  message: `the mcp service ${spec.name} runs at most ${callerShare(limit)} of its ${limit} processes for one caller`,
                  retryAfterSeconds: 5,
                }),
          ),
        )
      })

    const update = (id: string, f: (entry: Entry) => Entry) =>
      Ref.update(sessions, (map) => {
        const entry = map.get(id)
        return entry === undefined ? map : new Map(map).set(id, f(entry))
      })

    /** Runs a session's request, counted as busy until its response has closed. */
    const serve = (id: string, entry: Entry, req: IncomingMessage, res: ServerResponse, body?: unknown) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const counted = req.method === "POST"
        yield* update(id, (e) => ({ ...e, lastUsedMs: now, busy: e.busy + (counted ? 1 : 0) }))
        yield* Effect.promise(() => entry.bridge.transport.handleRequest(req, res, body))
        if (!counted) return
        yield* Effect.async<void>((resume) => {
          if (res.closed) return resume(Effect.void)
          res.once("close", () => resume(Effect.void))
        })
        const done = yield* Clock.currentTimeMillis
        yield* update(id, (e) => ({ ...e, lastUsedMs: done, busy: e.busy - 1 }))
      })

    /** A new session: its initialize, a slot, a process. */
    const open = (spec: ServiceSpec, caller: string, req: IncomingMessage, res: ServerResponse, mcp?: Checked) =>
      Effect.gen(function* () {
        const body = mcp !== undefined && mcp.message !== undefined ? mcp.message : yield* readJson(req)
        if (!isInitialize(body)) return rpcError(res, 400, "Bad Request: no session; send initialize first")
        const slot = yield* takeSlot(spec, caller)
        const limit = limitOf(spec)
        if (slot === "full") {
          const all = limit === 1 ? "1 process and it is in use" : `${limit} processes and all are in use`
          return yield* new Unavailable({
            message: `the mcp service ${spec.name} runs at most ${all}; try again later`,
          })
        }
        if (slot === "share") {
          return yield* new RateLimited({
            message: `the mcp service ${spec.name} runs at most ${callerShare(limit)} of its ${limit} processes for one caller; end a session first`,
            retryAfterSeconds: 60,
          })
        }
        const bridge = yield* Bridge.make({
          spec,
          caller,
          onClosed: (bridge) =>
            Effect.zipRight(
              Ref.update(sessions, (map) => new Map([...map].filter(([, e]) => e.bridge !== bridge))),
              freeSlot(spec.name, caller),
            ),
        }).pipe(
          Scope.extend(scope),
          Effect.catchAll((reason) =>
            Effect.zipRight(
              freeSlot(spec.name, caller),
              Effect.fail(new BadGateway({ message: `the mcp service ${spec.name} could not start: ${reason}` })),
            ),
          ),
        )
        bridge.grant = mcp?.grant ?? McpGrant.SERVICE
        yield* Effect.promise(() => bridge.transport.handleRequest(req, res, body))
        // The transport names the session as it takes the initialize, before the process answers it. Refused by the
        // transport (a bad protocol version, say), no session came of it.
        const id = bridge.transport.sessionId
        if (id === undefined) return yield* bridge.close
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(sessions, (map) => new Map(map).set(id, { bridge, lastUsedMs: now, busy: 0 }))
        // Its process may have ended already, taking the session with it before it was listed.
        if (yield* bridge.closed) yield* Ref.update(sessions, (map) => new Map([...map].filter(([key]) => key !== id)))
      })

    const handle = (spec: ServiceSpec, caller: string, req: IncomingMessage, res: ServerResponse, mcp?: Checked) =>
      Effect.gen(function* () {
        const header = req.headers["mcp-session-id"]
        const id = Array.isArray(header) ? header[0] : header
        if (id === undefined) {
          if (req.method !== "POST") return rpcError(res, 400, "Bad Request: no session; send initialize first")
          const version = req.headers["mcp-protocol-version"]
          if (McpEra.isModernVersion(typeof version === "string" ? version : undefined)) {
            return yield* serveModern(spec, caller, req, res, mcp)
          }
          return yield* open(spec, caller, req, res, mcp)
        }
        const entry = (yield* Ref.get(sessions)).get(id)
        // Someone else's session is as unknown as a closed one.
        if (entry === undefined || entry.bridge.caller !== caller || entry.bridge.service !== spec.name) {
          return rpcError(res, 404, "Session not found")
        }
        // The grant as the policy stands now: answers from here on are cut to it.
        entry.bridge.grant = mcp?.grant ?? McpGrant.SERVICE
        yield* serve(id, entry, req, res, mcp?.message)
      }).pipe(Effect.catchAll((error) => Effect.sync(() => ErrorResponse.write(res, error))))

    /** Starts a process, initializes it and lists its tools; the process stops with the probe. */
    const listTools = (spec: ServiceSpec) =>
      Effect.scoped(
        Effect.gen(function* () {
          const process = yield* McpProcess.spawn(spec)
          const client = yield* Effect.acquireRelease(
            Effect.sync(
              () =>
                new Client(
                  { name: "mesh-node-probe", version: pkg.version },
                  { jsonSchemaValidator: Unchecked.schemas },
                ),
            ),
            (client) => Effect.promise(() => client.close().catch(() => undefined)),
          )
          return yield* Effect.tryPromise({
            try: async (signal) => {
              await client.connect(process, { signal })
              const names = await ToolPages.list(client, signal, (tool) => tool.name)
              return [...new Set(names.filter((n) => n.length > 0 && n.length <= MAX_KEY_LENGTH))].sort()
            },
            catch: describe,
          })
        }),
      ).pipe(
        Effect.timeoutFail({
          duration: PROBE_TIMEOUT,
          onTimeout: () => `no answer within ${Duration.format(PROBE_TIMEOUT)}`,
        }),
      )

    const tools = (spec: ServiceSpec) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const last = (yield* Ref.get(known)).get(spec.name)
        const inUse = [...(yield* Ref.get(sessions)).values()].some((e) => e.bridge.service === spec.name)
        // Sessions are being served, or it answered lately: its tools are those it listed last.
        if (last !== undefined && (inUse || now - last.atMs < Duration.toMillis(PROBE_KEEP))) return last.names
        const modern = (yield* eraOf(spec)) === "modern"
        if (!modern && (yield* takeSlot(spec)) !== "taken") {
          return last?.names ?? (yield* Effect.fail(`all ${limitOf(spec)} processes are in use`))
        }
        const names =
          (yield* eraOf(spec)) === "modern"
            ? [
                ...new Set(
                  (yield* pool.toolNames(spec, ToolPages.MAX_TOOLS).pipe(
                    Effect.mapError((why) => (why === "full" || why === "share" ? "all processes are in use" : why)),
                    Effect.timeoutFail({
                      duration: PROBE_TIMEOUT,
                      onTimeout: () => `no answer within ${Duration.format(PROBE_TIMEOUT)}`,
                    }),
                  )).filter((n) => n.length > 0 && n.length <= MAX_KEY_LENGTH),
                ),
              ].sort()
            : yield* listTools(spec).pipe(Effect.ensuring(freeSlot(spec.name)))
        const at = yield* Clock.currentTimeMillis
        yield* Ref.update(known, (map) => new Map(map).set(spec.name, { names, atMs: at }))
        return names
      })

    const sweep = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const idle = [...(yield* Ref.get(sessions)).values()].filter(
        (e) => e.busy === 0 && now - e.lastUsedMs > Duration.toMillis(IDLE),
      )
      yield* Effect.forEach(idle, (e) => e.bridge.close, { discard: true })
      yield* pool.sweep
    })
    yield* sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("closing idle stdio MCP sessions failed", cause)),
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped,
    )

    return StdioServers.of({ handle, tools, running: Ref.get(slots).pipe(Effect.map((state) => state.total)) })
  }),
)

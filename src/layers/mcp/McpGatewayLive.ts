/**
 * McpGateway: the node's `/mcp`, both protocol eras on one endpoint. A POST's body is read (at most
 * ModernGateway.MAX_BODY) and classified by the SDK's own classifier (`classifyInboundRequest`, what its
 * `isLegacyRequest` and `createMcpHandler` route by, given the headers it reads and the body parsed here; no web
 * `Request` is built for it, which cost a 2025-era call about 0.1 ms of the node's CPU for nothing): a request carrying the 2026-07-28 `_meta` envelope (or a modern protocol-version header)
 * is served statelessly by modern/, everything else (`initialize`, requests in a session, GET and DELETE of a session)
 * by the 2025-era sessions in legacy/, exactly as before the modern era. Both serve the same tools in the same order,
 * in the agent's scope, and both hear when the federated tools change.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { classifyInboundRequest, isJsonContentType } from "@modelcontextprotocol/server"
import { Effect, Layer, Option, type Scope, Stream } from "effect"
import type { z } from "zod"
import * as TraceContext from "../../http/TraceContext.js"
import type { Agent } from "../../services/agents/CurrentAgent.js"
import { Federation } from "../../services/federation/Federation.js"
import { McpGateway, type McpGatewayService } from "../../services/mcp/McpGateway.js"
import * as LegacySessions from "./legacy/LegacySessions.js"
import * as ModernGateway from "./modern/ModernGateway.js"
import * as WebExchange from "./modern/WebExchange.js"
import * as Tool from "./Tool.js"
import * as CallTool from "./tools/CallTool.js"
import * as DescribeTool from "./tools/DescribeTool.js"
import * as DiscoverServices from "./tools/DiscoverServices.js"
import * as FindTools from "./tools/FindTools.js"
import * as ListLocalServices from "./tools/ListLocalServices.js"
import * as MeshInfo from "./tools/MeshInfo.js"

/** The body, or undefined when it is longer than `max` bytes (the rest is drained, not kept). */
const readBody = (req: IncomingMessage, max: number): Promise<Uint8Array | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let length = 0
    let over = false
    req.on("data", (chunk: Buffer) => {
      if (over) return
      length += chunk.length
      if (length > max) {
        over = true
        chunks.length = 0
        return
      }
      chunks.push(chunk)
    })
    req.once("end", () => resolve(over ? undefined : Buffer.concat(chunks)))
    req.once("error", reject)
  })

/** A header as a web `Headers.get` gives it: repeated values joined (Node joins the ones it does not know alike). */
const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(", ") : value
}

/** Whether the SDK routes this POST to 2025-era serving (its `isLegacyRequest`, on the body parsed already). */
const isLegacy = (req: IncomingMessage, body: unknown): boolean => {
  const protocolVersionHeader = header(req, "mcp-protocol-version")
  const mcpMethodHeader = header(req, "mcp-method")
  const mcpNameHeader = header(req, "mcp-name")
  return (
    classifyInboundRequest({
      httpMethod: "POST",
      ...(protocolVersionHeader === undefined ? {} : { protocolVersionHeader }),
      ...(mcpMethodHeader === undefined ? {} : { mcpMethodHeader }),
      ...(mcpNameHeader === undefined ? {} : { mcpNameHeader }),
      body,
    }).kind === "legacy"
  )
}

const parse = (body: Uint8Array): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8")))
  } catch {
    return Option.none()
  }
}

/** The gateway serving `tools` (the node's six, or a test's) beside the federated ones. */
export const make = <R>(
  tools: ReadonlyArray<Tool.Tool<z.ZodRawShape, R>>,
): Effect.Effect<McpGatewayService, never, R | Federation | Scope.Scope> =>
  Effect.gen(function* () {
    const definitions = tools.map(Tool.definition)
    const toolRuntime = yield* Effect.runtime<R | Federation>()
    const federation = yield* Federation
    const legacy = yield* LegacySessions.make(toolRuntime, tools, definitions)
    const modern = yield* ModernGateway.make(toolRuntime, tools, definitions)

    // The federated tools changed: sessions and listen streams of both eras hear of it.
    yield* federation.changes.pipe(
      Stream.runForEach(() => Effect.zipRight(legacy.toolsChanged, modern.toolsChanged)),
      Effect.forkScoped,
    )

    const handle = (req: IncomingMessage, res: ServerResponse, agent?: Agent) =>
      Effect.gen(function* () {
        // GET and DELETE are the 2025 era's session operations; the 2026-07-28 revision has only POST.
        if (req.method !== "POST") return yield* legacy.handle(req, res, agent)
        if (!isJsonContentType(req.headers["content-type"] ?? null)) {
          return WebExchange.error(
            res,
            415,
            -32000,
            "Unsupported Media Type: Content-Type must be application/json",
            null,
          )
        }
        const body = yield* Effect.promise(() => readBody(req, ModernGateway.MAX_BODY).catch(() => undefined))
        if (body === undefined) {
          return WebExchange.error(
            res,
            413,
            -32000,
            `Payload Too Large: request body exceeds ${ModernGateway.MAX_BODY} bytes`,
            null,
          )
        }
        const parsed = parse(body)
        if (Option.isNone(parsed)) return WebExchange.error(res, 400, -32700, "Parse error: Invalid JSON", null)
        if (isLegacy(req, parsed.value)) return yield* legacy.handle(req, res, agent, parsed.value)
        const traceparent = Option.getOrUndefined(yield* TraceContext.current)
        return yield* modern.handle(WebExchange.toRequest(req, body, traceparent), res, agent, parsed.value)
      })

    return McpGateway.of({ handle, sessions: legacy.sessions })
  })

const SIX = [
  MeshInfo.tool,
  ListLocalServices.tool,
  DiscoverServices.tool,
  FindTools.tool,
  DescribeTool.tool,
  CallTool.tool,
]

export const layer = Layer.scoped(McpGateway, make<Tool.Requirements<typeof SIX>>(SIX))

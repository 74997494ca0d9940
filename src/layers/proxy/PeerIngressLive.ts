/**
 * PeerIngress over the MeshHost: `/mesh/proxy/1.0.0` is registered on libp2p (the gate holds streams back until
 * their peer authenticated) and every stream is handed, as a socket, to a node:http server that never listens. Each
 * request is checked (caller authenticated and not banned, path, policy, service) and then forwarded by Backend.ts
 * to the service's `target_url`, or served by the stdio MCP server the service runs (StdioServers). A stream counts
 * against its peer's share and is reset when its headers are late or it goes idle (IngressStreams). MCP services are
 * granted whole or tool by tool (McpGrant, McpMessages) and their HTTP sessions bound to their caller (McpSessions);
 * a caller's first request may ask for its session to be opened here (McpOpen).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Clock, Duration, Effect, Either, Layer, Option, Ref, Runtime } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as Biscuit from "../../crypto/Biscuit.js"
import * as AgentScope from "../../domain/AgentScope.js"
import { type ApiError, BadRequest, Forbidden, NotFound } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as McpGrant from "../../domain/McpGrant.js"
import * as McpHeaders from "../../domain/McpHeaders.js"
import * as McpOpenHeaders from "../../domain/McpOpen.js"
import type { ServiceSpec } from "../../domain/NodeFile.js"
import * as Policy from "../../domain/Policy.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as TraceContext from "../../http/TraceContext.js"
import { StreamResponse } from "../../p2p/StreamResponse.js"
import { StreamSocket } from "../../p2p/StreamSocket.js"
import * as Deadlines from "../../platform/Deadlines.js"
import * as Spans from "../../platform/Spans.js"
import { AgentLog } from "../../services/agents/AgentLog.js"
import { Agents } from "../../services/agents/Agents.js"
import { TOKEN_HEADER } from "../../services/agents/CurrentAgent.js"
import { LocalServices } from "../../services/local/LocalServices.js"
import { StdioServers } from "../../services/mcp/StdioServers.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { PolicyView } from "../../services/node/PolicyView.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { PeerIngress } from "../../services/proxy/PeerIngress.js"
import { PROTOCOL } from "../../services/proxy/PeerProxy.js"
import * as Backend from "./Backend.js"
import { IngressStreams } from "./IngressStreams.js"
import * as McpMessages from "./McpMessages.js"
import * as McpOpen from "./McpOpen.js"
import * as McpSessions from "./McpSessions.js"

/**
 * Concurrent proxy streams per connection and protocol, each way. An MCP session alone holds one open GET stream,
 * and libp2p's defaults (32 in, 64 out) would cap a busy caller well below what one connection carries.
 */
const MAX_STREAMS = 1024

/** Where an allowed request goes: a backend URL, or a stdio MCP server this node runs. */
type Decision =
  | { readonly _tag: "Http"; readonly target: Backend.Target; readonly grant?: McpGrant.Grant; readonly agent?: Scoped }
  | {
      readonly _tag: "Stdio"
      readonly service: ServiceSpec
      readonly caller: string
      readonly grant: McpGrant.Grant
      readonly agent?: Scoped
    }

/** The calling peer's agent, as its token verified here, and the grant its scope gives on an MCP service. */
interface Scoped {
  readonly scope: AgentScope.Scope
  readonly grant?: McpGrant.Grant
}

/** A request's path split into service and the rest: `/<type>/<name><path>?<query>`. */
const parseTarget = (url: string) => {
  const q = url.indexOf("?")
  const rawPath = q === -1 ? url : url.slice(0, q)
  const [, type = "", name = "", ...rest] = rawPath.split("/")
  return {
    rawPath,
    type,
    name,
    path: rest.length === 0 ? "" : `/${rest.join("/")}`,
    query: q === -1 ? "" : url.slice(q + 1),
  }
}

export const layer = Layer.scoped(
  PeerIngress,
  Effect.gen(function* () {
    const host = yield* MeshHost
    const membership = yield* Membership
    const policy = yield* PolicyView
    // Each service's target parsed once, found by `<type>/<name>`.
    const services = new Map(
      (yield* NodeConfig).file.services.map((service) => [
        `${service.type}/${service.name}`,
        {
          service,
          backend: service.target_url === undefined ? undefined : Forwarding.target(service.target_url),
        },
      ]),
    )
    const metrics = yield* Metrics
    const served = metrics.counter(
      "mesh_node_proxy_served_total",
      "Requests from peers answered through the proxy, by service type and status code.",
    )
    const inFlight = yield* Ref.make(0)
    const limits = (yield* NodeConfig).ingress
    const local = yield* LocalServices
    const stdio = yield* StdioServers
    const run = Runtime.runFork(yield* Effect.runtime<never>())
    const deadlines = yield* Deadlines.make(
      Deadlines.tickFor([
        limits.headersTimeout,
        limits.idleTimeout,
        Option.getOrElse(limits.backendHeadersTimeout, () => Duration.infinity),
      ]),
    )
    const streams = new IngressStreams(limits, deadlines)
    const backend = yield* Backend.make(limits.backendHeadersTimeout, deadlines)
    // Sessions relayed for peers, ended at their backend when abandoned (idle, or their peer gone).
    const sessions = yield* McpSessions.make<Backend.Target>({
      end: (service, id, binding) =>
        backend.endSession(binding.target, id, binding.protocolVersion).pipe(
          Effect.flatMap((status) =>
            Effect.logInfo("ended an abandoned MCP session at its backend").pipe(
              Effect.annotateLogs({ service, peer: binding.caller, status }),
            ),
          ),
          Effect.catchAll((reason) =>
            Effect.logInfo("ending an abandoned MCP session failed").pipe(
              Effect.annotateLogs({ service, peer: binding.caller, reason }),
            ),
          ),
        ),
      present: (peer) =>
        Effect.zipWith(
          host.peer(peer),
          membership.trust,
          (found, trust) => found._tag === "Some" && !trust.isBanned(found.value.peerId),
        ),
    })

    /** This peer as `allowed_targets` sees it, recomputed when the credential changes. */
    const selfCache = yield* Ref.make<
      | {
          readonly credential: Uint8Array
          readonly subject: Policy.Subject
          readonly labels: Readonly<Record<string, string>>
        }
      | undefined
    >(undefined)
    const self = Effect.gen(function* () {
      const credential = yield* membership.credential
      const cached = yield* Ref.get(selfCache)
      if (cached?.credential === credential) return cached.subject
      const verified = Biscuit.verify(credential, (yield* membership.trust).keyFor, yield* Clock.currentTimeMillis, {
        allowExpired: true,
      })
      const subject = Policy.subjectOf(
        host.peerId,
        Either.isRight(verified) ? verified.right.facts.identity : undefined,
      )
      const labels = Either.isRight(verified) ? verified.right.facts.labels : {}
      yield* Ref.set(selfCache, { credential, subject, labels })
      return subject
    })
    /** The labels this peer's credential attests, which an agent's scope may require. */
    const selfLabels = Effect.zipRight(
      self,
      Effect.map(Ref.get(selfCache), (cached) => cached?.labels ?? {}),
    )
    const agents = yield* Agents
    const agentLog = yield* AgentLog

    /**
     * The agent a peer's request is made for (`X-Mesh-Agent-Token`): its credential must name the calling peer, its
     * scope cover the service, method and path, and this peer attest the labels it requires.
     */
    const agentOf = (
      req: IncomingMessage,
      caller: string,
      call: AgentScope.ServiceCall,
    ): Effect.Effect<Scoped | undefined, Forbidden> =>
      Effect.gen(function* () {
        const header = req.headers[TOKEN_HEADER]
        if (header === undefined) return undefined
        const text = Array.isArray(header) ? header.join(",") : header
        const verified = yield* agents.fromPeer(text, caller)
        if (Either.isLeft(verified)) {
          yield* logServing({ agent: "unknown", caller, call, rule: "token", status: 403 })
          return yield* new Forbidden({ message: `agent token refused: ${verified.left}` })
        }
        const scope = verified.right
        const decision = AgentScope.serviceAllowed(scope, call)
        const labelled = decision._tag === "Allowed" ? AgentScope.labelsAllowed(scope, yield* selfLabels) : decision
        if (labelled._tag === "Denied") {
          yield* logServing({ agent: scope.agent, caller, call, rule: labelled.rule, status: 403 })
          return yield* new Forbidden({ message: labelled.reason })
        }
        const grant = call.type === "mcp" ? AgentScope.mcpGrant(scope, call.name) : undefined
        return grant === undefined ? { scope } : { scope, grant }
      })

    /** One line of the call log for a request refused here on an agent's behalf. */
    const logServing = (entry: {
      readonly agent: string
      readonly caller: string
      readonly call: AgentScope.ServiceCall
      readonly rule: string
      readonly status: number
    }) =>
      agentLog.record({
        agent: entry.agent,
        side: "serving",
        peer: entry.caller,
        service: `${entry.call.type}://${entry.call.name}`,
        target: "",
        outcome: "denied",
        rule: entry.rule,
        status: entry.status,
        duration_ms: 0,
        bytes_in: 0,
        bytes_out: 0,
      })

    /** Who asks, for what, and whether the policy lets them: the target, or the refusal. */
    const decide = (req: IncomingMessage): Effect.Effect<Decision, ApiError> =>
      Effect.gen(function* () {
        const socket = req.socket
        if (!(socket instanceof StreamSocket)) return yield* new Forbidden({ message: "not a mesh stream" })
        const caller = yield* host.peer(socket.remotePeer)
        if (caller._tag === "None" || (yield* membership.trust).isBanned(socket.remotePeer)) {
          return yield* new Forbidden({ message: "the caller is not an authenticated peer" })
        }
        const target = parseTarget(req.url ?? "/")
        const whole = Forwarding.checkPath(target.rawPath)
        if (Either.isLeft(whole)) return yield* new BadRequest({ message: whole.left })
        // The policy sees, and the backend gets, one form of the path: the canonical one.
        const path = Forwarding.canonicalPath(target.path)
        if (Either.isLeft(path)) return yield* new BadRequest({ message: path.left })
        const type = Forwarding.checkService(target.type, target.name)
        if (Either.isLeft(type)) return yield* new BadRequest({ message: type.left })
        const known = yield* policy.issuers
        const snapshot = yield* policy.current
        const doc = snapshot._tag === "Some" ? snapshot.value.document : undefined
        const peer = caller.value
        const roles =
          doc === undefined
            ? new Set([peer.role])
            : Policy.callerRoles(doc, peer.role, Policy.subjectOf(peer.peerId, peer.identity), known)
        // An MCP service is granted whole or tool by tool; its tools are told apart in the JSON-RPC, not the path.
        const decision =
          type.right === "mcp"
            ? McpGrant.authorize(doc, roles, target.name, yield* self, known)
            : Policy.authorizeService(
                doc,
                roles,
                { type: type.right, name: target.name, path: path.right },
                yield* self,
                known,
              )
        if (decision._tag === "Denied") {
          return yield* new Forbidden({ message: `denied by policy rule ${decision.rule}: ${decision.reason}` })
        }
        const agent = yield* agentOf(req, peer.peerId, {
          type: type.right,
          name: target.name,
          method: req.method ?? "GET",
          path: path.right,
        })
        const policyGrant = "grant" in decision ? decision.grant : undefined
        // What both the policy and the agent's scope let through; checked against each below, to name the refuser.
        const grant =
          agent?.grant === undefined ? policyGrant : McpGrant.intersect(policyGrant ?? McpGrant.SERVICE, agent.grant)
        const scoped = agent === undefined ? {} : { agent }
        if (grant?._tag === "Tools" && path.right !== "" && path.right !== "/") {
          return yield* new Forbidden({
            message: `denied by policy rule allowed_services: a grant of single tools reaches only the endpoint of mcp://${target.name}`,
          })
        }
        const found = services.get(`${type.right}/${target.name}`)
        if (found === undefined) {
          return yield* new NotFound({ message: `no ${type.right} service named ${target.name} on this peer` })
        }
        const { service, backend } = found
        if (service.target_url === undefined || backend === undefined) {
          // A stdio MCP server has one endpoint, the service itself.
          if (path.right !== "" && path.right !== "/") {
            return yield* new NotFound({ message: `the mcp service ${service.name} answers only at its own path` })
          }
          return { _tag: "Stdio", service, caller: peer.peerId, grant: grant ?? McpGrant.SERVICE, ...scoped }
        }
        return {
          _tag: "Http",
          target: {
            service,
            targetUrl: service.target_url,
            backend,
            path: path.right,
            query: target.query,
            caller: {
              peerId: peer.peerId,
              role: peer.role,
              labels: peer.labels,
              ...(agent === undefined ? {} : { agent: agent.scope.agent }),
            },
          },
          ...(grant === undefined ? {} : { grant }),
          ...scoped,
        }
      })

    /** An HTTP MCP backend: a session is used only by the caller that opened it (McpSessions). */
    const forwardMcp = (req: IncomingMessage, res: ServerResponse, target: Backend.Target) =>
      Effect.gen(function* () {
        const { name } = target.service
        const caller = target.caller.peerId
        const header = req.headers["mcp-session-id"]
        const id = Array.isArray(header) ? header.join(", ") : header
        const version = req.headers["mcp-protocol-version"]
        if (
          id !== undefined &&
          !(yield* sessions.owns(name, caller, id, Array.isArray(version) ? undefined : version))
        ) {
          return McpSessions.writeNotFound(res)
        }
        // What ending the session later needs: never the body this request carried.
        const { mcp: _, ...kept } = target
        if (id !== undefined) yield* sessions.using(name, id)
        const wanted =
          id === undefined && req.method === "POST"
            ? McpOpenHeaders.version(req.headers[McpOpenHeaders.OPEN])
            : undefined
        if (wanted !== undefined) {
          const opened = yield* Effect.either(McpOpen.open(backend.exchange, target, req, wanted))
          if (Either.isLeft(opened)) {
            yield* Effect.logInfo("opening an MCP session for a peer failed").pipe(
              Effect.annotateLogs({ service: name, peer: caller, reason: opened.left }),
            )
            return McpOpen.writeNotOpened(res, opened.left)
          }
          const { sessionId, protocolVersion } = opened.right
          if (sessionId !== undefined) yield* sessions.bind(name, caller, sessionId, kept, protocolVersion)
          // The caller's request goes on in the new session.
          if (sessionId !== undefined) req.headers["mcp-session-id"] = sessionId
          req.headers["mcp-protocol-version"] = protocolVersion
          // Said by this node, so the caller learns the session even when the request then fails on the way.
          res.setHeader(McpOpenHeaders.OPENED, protocolVersion)
          if (sessionId !== undefined) res.setHeader("mcp-session-id", sessionId)
          return yield* backend.forward(req, res, target)
        }
        const onResponse = (upstream: IncomingMessage) => {
          const ok = (upstream.statusCode ?? 500) < 300
          const opened = upstream.headers["mcp-session-id"]
          if (id === undefined && ok && typeof opened === "string") run(sessions.bind(name, caller, opened, kept))
          if (id !== undefined && ok && req.method === "DELETE") run(sessions.unbind(name, id))
        }
        yield* backend.forward(req, res, { ...target, onResponse })
      })

    const serve = (req: IncomingMessage, res: ServerResponse) =>
      Effect.gen(function* () {
        // One request per stream: the stream ends with its answer, and no idle stream waits for another request.
        res.setHeader("connection", "close")
        const decided = yield* Effect.either(decide(req))
        if (Either.isLeft(decided)) ErrorResponse.write(res, decided.left)
        // Counted per service while it runs: the load announced with the node's services.
        else {
          const decision = decided.right
          const service = decision._tag === "Http" ? decision.target.service : decision.service
          const started = yield* Clock.currentTimeMillis
          let refusedBy: string | undefined
          const answer = Effect.gen(function* () {
            const grant = decision.grant
            const tools = grant?._tag === "Tools"
            // An MCP body is read when a grant of single tools needs its messages, or when headers mirror it (Mcp-*):
            // headers that disagree with it are refused before anything reaches the backend (McpHeaders).
            const body =
              service.type === "mcp" && req.method === "POST" && (tools || McpHeaders.present(req.headers))
                ? yield* McpMessages.read(req)
                : undefined
            const mismatch = body === undefined ? undefined : McpHeaders.mismatch(req.headers, body.message)
            if (body !== undefined && mismatch !== undefined) {
              refusedBy = "header_mismatch"
              return McpMessages.writeMismatch(res, body.message, mismatch)
            }
            // A caller holding single tools has each message it sends checked, and what it gets back filtered.
            const checked =
              tools && body !== undefined
                ? McpMessages.checkRead(
                    body,
                    grant,
                    service.name,
                    decision.agent?.grant === undefined
                      ? []
                      : [
                          {
                            grant: decision.agent.grant,
                            wording: AgentScope.wording(decision.agent.scope),
                            rule: "scope.tools",
                          },
                        ],
                  )
                : undefined
            if (checked?._tag === "Denied") {
              refusedBy = McpMessages.ruleOf(checked.answer)
              return McpMessages.writeDenied(res, checked.answer)
            }
            // What goes on is the body that was read and checked, never the bytes that came.
            const mcp =
              body !== undefined
                ? { grant: grant ?? McpGrant.SERVICE, body: body.bytes, message: body.message }
                : grant?._tag === "Tools"
                  ? { grant }
                  : undefined
            if (decision._tag === "Http") {
              const target = mcp === undefined ? decision.target : { ...decision.target, mcp }
              if (service.type !== "mcp") return yield* backend.forward(req, res, target)
              return yield* forwardMcp(req, res, target)
            }
            return yield* stdio.handle(decision.service, decision.caller, req, res, mcp)
          }).pipe(Effect.catchAll((error) => Effect.sync(() => ErrorResponse.write(res, error))))
          yield* Effect.scoped(Effect.zipRight(local.track(service.type, service.name), answer))
          if (decision.agent !== undefined) {
            // The serving side's line of the call: the agent it verified, never the request's content.
            const socket = req.socket
            yield* agentLog.record({
              agent: decision.agent.scope.agent,
              side: "serving",
              peer: socket instanceof StreamSocket ? socket.remotePeer : "",
              service: `${service.type}://${service.name}`,
              target: "",
              outcome: refusedBy !== undefined ? "denied" : res.statusCode >= 400 ? "error" : "allowed",
              rule: refusedBy ?? "",
              status: res.statusCode,
              duration_ms: (yield* Clock.currentTimeMillis) - started,
              bytes_in: socket.bytesRead,
              bytes_out: socket.bytesWritten,
            })
          }
        }
        const type = parseTarget(req.url ?? "/").type
        served.inc({ type: Forwarding.isServiceType(type) ? type : "unknown", code: String(res.statusCode) })
        yield* Spans.annotate("http.response.status_code", res.statusCode)
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(
            Effect.logError("proxy request from a peer failed", cause),
            Effect.sync(() => {
              if (res.headersSent) return void res.destroy()
              res.writeHead(500, { "content-type": "application/json", "cache-control": "no-store" })
              res.end(JSON.stringify({ error: "internal", message: "internal error" }))
            }),
          ),
        ),
      )

    const handle = (req: IncomingMessage, res: ServerResponse) =>
      Effect.acquireUseRelease(
        Ref.update(inFlight, (n) => n + 1),
        () => traced(req, serve(req, res)),
        () => Ref.update(inFlight, (n) => n - 1),
      )

    /** One server span per request from a peer, continuing the trace the calling node's proxy span started. */
    const traced = <A, E>(req: IncomingMessage, effect: Effect.Effect<A, E>) =>
      Effect.flatMap(Spans.enabled, (on) => {
        if (!on) return effect
        const target = parseTarget(req.url ?? "/")
        const type = Forwarding.isServiceType(target.type) ? target.type : "unknown"
        return Spans.withSpan("mesh.ingress", {
          kind: "server",
          captureStackTrace: false,
          attributes: {
            "mesh.service.type": type,
            // Only a well-formed name: anything else is whatever the caller wrote, and is refused.
            ...(Either.isRight(Forwarding.checkService(target.type, target.name))
              ? { "mesh.service.name": target.name }
              : {}),
            "http.request.method": TraceContext.method(req.method ?? "GET"),
            ...(req.socket instanceof StreamSocket ? { "mesh.peer.id": req.socket.remotePeer.toString() } : {}),
          },
          ...TraceContext.parentOption(req.headers),
        })(effect)
      })

    // No timeouts on the request as a whole: SSE answers and long uploads are legitimate.
    const server = createServer({ requestTimeout: 0, ServerResponse: StreamResponse }, (req, res) => {
      if (req.socket instanceof StreamSocket) streams.headersArrived(req.socket)
      run(handle(req, res))
    })
    yield* Effect.acquireRelease(
      Effect.promise(() =>
        host.libp2p.handle(
          PROTOCOL,
          (stream, connection) => {
            const socket = new StreamSocket(stream, connection)
            if (streams.admit(socket)) server.emit("connection", socket)
          },
          { runOnLimitedConnection: true, maxInboundStreams: MAX_STREAMS, maxOutboundStreams: MAX_STREAMS },
        ),
      ),
      () => Effect.promise(() => host.libp2p.unhandle(PROTOCOL).catch(() => undefined)),
    )

    return PeerIngress.of({ inFlight: Ref.get(inFlight), mcpSessions: sessions.count })
  }),
)

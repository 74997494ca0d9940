/**
 * The path of every request through the node's local API: find its route in the table (404/405 otherwise), check
 * that a TCP caller names this machine in `Host` and `Origin` (403: DNS rebinding), what the caller presented for the
 * route's access on this listener (401 missing, 403 wrong, 403 for evidence over plain TCP), hold back routes that need the mesh until the node is connected (503), run the handler, render any
 * failure as the one error body, and count and time the request by route label. Each request is one server span
 * named by method and route pattern, continuing the caller's `traceparent`.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Clock, Context, Effect, Either, Option } from "effect"
import { NodeConfig } from "../config/NodeConfig.js"
import {
  Forbidden,
  MethodNotAllowed,
  NotFound,
  StrongTransportRequired,
  type Unauthorized,
  Unavailable,
} from "../domain/Errors.js"
import * as LocalHosts from "../domain/LocalHosts.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import * as TraceContext from "../http/TraceContext.js"
import { Agents } from "../services/agents/Agents.js"
import { type Agent, CurrentAgent } from "../services/agents/CurrentAgent.js"
import { ApiToken } from "../services/node/ApiToken.js"
import { NodeLifecycle } from "../services/node/NodeLifecycle.js"
import * as Admission from "./Admission.js"
import { Listener } from "./Listener.js"
import type { RequestMetrics } from "./RequestMetrics.js"
import * as Route from "./Route.js"

/** Probes and scrapes are not counted, so dashboards show agents' traffic rather than monitoring. */
const UNCOUNTED = new Set(["healthz", "readyz", "metrics"])

/**
 * The routes an agent token reaches: the ones that do work on the mesh for an agent, each of which applies the
 * agent's scope. Everything else (identity evidence, debug views, minting, the call log) is the operator's.
 */
const AGENT_ROUTES = new Set(["mcp", "mesh_proxy", "discover", "v1_models", "v1_chat_completions", "v1_completions"])

/** The names the local API answers to in Host and Origin (DNS rebinding), from the node's settings. */
export const hostRules = (settings: NodeConfig["Type"]) =>
  LocalHosts.rules(
    Option.getOrUndefined(Option.map(settings.bindAddress, (address) => address.host)),
    settings.allowedHosts,
  )

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/** Failures under `prefix` (matched or not) are rendered by `render`: `/v1/*` answers in OpenAI's error shape. */
export interface ErrorDialect {
  readonly prefix: string
  readonly render: ErrorResponse.Renderer
}

export const make = <T extends ReadonlyArray<Route.Route<unknown>>>(
  routes: T,
  dialects: ReadonlyArray<ErrorDialect>,
  metrics: RequestMetrics,
) =>
  Effect.gen(function* () {
    const lookup = Route.table(routes)
    const renderFor = (path: string): ErrorResponse.Renderer =>
      dialects.find((d) => path.startsWith(d.prefix))?.render ?? ErrorResponse.body
    const token = yield* ApiToken
    const settings = yield* NodeConfig
    const hosts = hostRules(settings)
    const lifecycle = yield* NodeLifecycle

    /** An agent token verified as this node's (Left: why it is refused). */
    const agentOf = (text: string): Effect.Effect<Either.Either<Agent, string>> =>
      Effect.flatMap(lifecycle.phase, (phase) =>
        phase._tag === "Member"
          ? Context.get(phase.context, Agents).local(text)
          : Effect.succeed(Either.left("this node has not joined the mesh yet")),
      )

    /**
     * The request as the handler sees it, the API token removed from wherever it travelled, and the agent it is made
     * for when an agent token was presented (on the socket too: an agent holding one is scoped wherever it calls).
     */
    const authenticate = (
      request: HttpServerRequest.HttpServerRequest,
      access: Route.Access,
      listener: Listener["Type"],
      label: string,
    ): Effect.Effect<
      readonly [HttpServerRequest.HttpServerRequest, Option.Option<Agent>],
      Unauthorized | Forbidden | StrongTransportRequired
    > =>
      Effect.gen(function* () {
        const trusted = listener.kind === "socket" || listener.verifiedClient
        if (access === "open") return [request, Option.none()] as const
        if (access === "strong" && !trusted) {
          return yield* new StrongTransportRequired({
            message: "identity evidence is served only over the Unix socket or a verified mTLS connection",
          })
        }
        const admission = Admission.admit(request.headers, access, trusted, token.matches)
        if (admission._tag === "Refused") return yield* admission.error
        if (admission._tag === "Admitted")
          return [request.modify({ headers: admission.headers }), Option.none()] as const
        const agent = yield* agentOf(admission.token)
        if (Either.isLeft(agent)) {
          // Where no token is needed, `Authorization` may be the client's own for something else (an OpenAI key): a
          // token there that is no agent token of ours is left alone. One sent in X-Mesh-Authentication is refused.
          if (trusted && admission.header === "authorization") {
            return [request.modify({ headers: admission.headers }), Option.none()] as const
          }
          return yield* new Forbidden({ message: `agent token refused: ${agent.left}` })
        }
        if (!AGENT_ROUTES.has(label)) {
          return yield* new Forbidden({
            message: "an agent token reaches only /mcp, /mesh/<peer>/..., /mesh/service/discover and /v1",
          })
        }
        return [request.modify({ headers: Admission.withoutAgentToken(admission) }), Option.some(agent.right)] as const
      })

    /** DNS rebinding: a page reaching the API under its own name shows it in `Host` or `Origin` (LocalHosts). */
    const fromThisMachine = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void, Forbidden> =>
      !LocalHosts.hostAllowed(hosts, request.headers.host)
        ? Effect.fail(
            new Forbidden({ message: "the Host header names no address of this node: add it with --allowed-hosts" }),
          )
        : !LocalHosts.originAllowed(hosts, request.headers.origin)
          ? Effect.fail(
              new Forbidden({ message: "requests from this Origin are refused: add its host with --allowed-hosts" }),
            )
          : Effect.void

    const available = (availability: Route.Availability): Effect.Effect<void, Unavailable> =>
      availability === "always"
        ? Effect.void
        : Effect.gen(function* () {
            const phase = yield* lifecycle.phase
            if (phase._tag === "LoginRequired") {
              return yield* new Unavailable({ message: "this node is not enrolled: run mesh-node join" })
            }
            if (phase._tag === "Starting") {
              return yield* new Unavailable({ message: "this node is joining the mesh" })
            }
            if (availability === "connected" && !(yield* lifecycle.connected)) {
              return yield* new Unavailable({ message: "not connected to the mesh" })
            }
          })

    const serve = (
      request: HttpServerRequest.HttpServerRequest,
      found: ReturnType<typeof lookup>,
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, Route.Requirements<T> | Listener> =>
      Effect.gen(function* () {
        if (found._tag === "NotFound") return yield* new NotFound({ message: "no such route" })
        if (found._tag === "WrongMethod") {
          return yield* new MethodNotAllowed({ message: `use ${found.allow.join(" or ")}`, allow: found.allow })
        }
        const listener = yield* Listener
        // A browser cannot reach the socket; probes (open routes) may name the node however their platform does.
        if (listener.kind !== "socket" && found.route.access !== "open") yield* fromThisMachine(request)
        const [authenticated, agent] = yield* authenticate(request, found.route.access, listener, found.match.label)
        yield* available(found.route.availability)
        const handler = (found.route.handler as Route.Handler<Route.Requirements<T>>).pipe(
          Effect.provideService(HttpServerRequest.HttpServerRequest, authenticated),
          Effect.provideService(Route.RouteMatch, found.match),
        )
        return yield* Option.isSome(agent) ? Effect.provideService(handler, CurrentAgent, agent.value) : handler
      })

    /** One server span per request, named by method and route pattern, while tracing is on. */
    const traced = (request: HttpServerRequest.HttpServerRequest, found: ReturnType<typeof lookup>) =>
      TraceContext.serverSpan(request, found._tag === "Found" ? found.route.path : "unmatched")

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = yield* Clock.currentTimeNanos
      const path = pathOf(request.url)
      const found = lookup(request.method, path)
      yield* metrics.enter
      const response = yield* serve(request, found).pipe(
        Effect.catchAllCause((cause) => ErrorResponse.fromCause(cause, renderFor(path))),
        traced(request, found),
        Effect.ensuring(metrics.leave),
      )
      const label = found._tag === "Found" ? found.match.label : "unmatched"
      if (!UNCOUNTED.has(label)) {
        metrics.record(label, response.status, Number((yield* Clock.currentTimeNanos) - started) / 1e9)
      }
      return response
    })
  })

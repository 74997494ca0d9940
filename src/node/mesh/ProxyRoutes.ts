/**
 * `ANY /mesh/<peer-id>/<type>/<name>[/<path>]`: the reverse proxy to one service on one peer. The API token travels
 * only in `X-Mesh-Authentication` (the middleware removes it); `Authorization` belongs to the service. Refusals
 * before anything is sent: a `..` segment, bad labels syntax (400), labels not attested (403), an unreachable peer
 * (502), and for an agent, what its scope does not cover (403 naming the rule; PeerProxy checks the service, method,
 * path and labels, this route an MCP body's tool calls, answered as JSON-RPC errors). The peer's answer, refusals
 * included, is streamed back as it comes.
 */

import type { IncomingMessage } from "node:http"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Clock, Effect, Either, Option } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import { type ApiError, BadRequest } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as McpGrant from "../../domain/McpGrant.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as AgentCalls from "../../layers/agents/AgentCalls.js"
import * as McpMessages from "../../layers/proxy/McpMessages.js"
import { hasBody, relayResponse } from "../../layers/proxy/Relay.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { PeerProxy } from "../../services/proxy/PeerProxy.js"
import { inMember } from "../InMember.js"
import { Listener } from "../Listener.js"
import { raw } from "../RawHandler.js"
import * as Route from "../Route.js"

const lengthOf = (message: IncomingMessage): number => Number(message.headers["content-length"] ?? 0) || 0

const handler = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const match = yield* Route.RouteMatch
  const listener = yield* Listener
  const startedMs = yield* Clock.currentTimeMillis
  const url = request.url
  const q = url.indexOf("?")
  const rawPath = q === -1 ? url : url.slice(0, q)
  // The whole path, peer and service segments too: `/mesh/x/../..` must not reach any rule that decodes it.
  const path = Forwarding.checkPath(rawPath)
  if (Either.isLeft(path)) return yield* new BadRequest({ message: path.left })
  const { peer = "", type = "", name = "" } = match.params
  const service = Forwarding.checkService(type, name)
  if (Either.isLeft(service)) return yield* new BadRequest({ message: service.left })
  const required = Forwarding.requiredLabels(request.headers)
  if (Either.isLeft(required)) return yield* new BadRequest({ message: required.left })
  const proxy = yield* PeerProxy
  const incoming = NodeHttpServerRequest.toIncomingMessage(request)
  const seen = { peer, service: `${type}://${name}`, target: "", startedMs, bytesIn: lengthOf(incoming) }
  // An agent holding single tools of an MCP service: each message is checked here, before it leaves the machine.
  const agent = yield* Effect.serviceOption(CurrentAgent)
  const grant = Option.isSome(agent) && type === "mcp" ? AgentScope.mcpGrant(agent.value.scope, name) : undefined
  const checked =
    Option.isSome(agent) && grant?._tag === "Tools" && request.method === "POST"
      ? yield* McpMessages.check(incoming, McpGrant.SERVICE, name, [
          { grant, wording: AgentScope.wording(agent.value.scope), rule: "scope.tools" },
        ])
      : undefined
  if (checked?._tag === "Denied") {
    yield* AgentCalls.record({ ...seen, status: 200, refusal: "denied by scope rule scope.tools", bytesOut: 0 })
    return yield* raw((_req, res) => Effect.sync(() => McpMessages.writeDenied(res, checked.answer)))
  }
  const body = checked?._tag === "Forward" ? checked.bytes : hasBody(incoming) ? incoming : undefined
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const upstream = yield* proxy.forward({
        peerId: peer,
        type: service.right,
        name,
        path: match.rest,
        query: q === -1 ? "" : url.slice(q + 1),
        method: request.method,
        headers: request.headers,
        ...(body === undefined ? {} : { body }),
        ...(required.right === undefined ? {} : { requiredLabels: required.right }),
        origin: {
          host: request.headers.host ?? "localhost",
          proto: listener.kind === "tls" ? "https" : "http",
          prefix: `/mesh/${peer}/${type}/${name}`,
        },
      })
      yield* AgentCalls.record({ ...seen, status: upstream.statusCode ?? 502, bytesOut: lengthOf(upstream) })
      return yield* raw((_req, res) => Effect.sync(() => relayResponse(upstream, res)))
    }),
  ).pipe(
    Effect.tapError((error: ApiError) =>
      AgentCalls.record({
        ...seen,
        status: ErrorResponse.parts(error).status,
        refusal: error.message,
        bytesOut: 0,
      }),
    ),
  )
})

export const routes = [
  Route.make({
    methods: "*",
    path: "/mesh/:peer/:type/:name/*",
    label: "mesh_proxy",
    access: "forwarding",
    availability: "connected",
    handler: inMember(handler),
  }),
]

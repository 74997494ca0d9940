/**
 * `ANY /mesh/<peer-id>/<type>/<name>[/<path>]`: the reverse proxy to one service on one peer. The API token travels
 * only in `X-Mesh-Authentication` (the middleware removes it); `Authorization` belongs to the service. Refusals
 * before anything is sent: a `..` segment, bad labels syntax (400), labels not attested (403), an unreachable peer
 * (502). The peer's answer, refusals included, is streamed back as it comes.
 */

import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either } from "effect"
import { BadRequest } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import { hasBody, relayResponse } from "../../layers/proxy/Relay.js"
import { PeerProxy } from "../../services/proxy/PeerProxy.js"
import { inMember } from "../InMember.js"
import { Listener } from "../Listener.js"
import { raw } from "../RawHandler.js"
import * as Route from "../Route.js"

const handler = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const match = yield* Route.RouteMatch
  const listener = yield* Listener
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
        ...(hasBody(incoming) ? { body: incoming } : {}),
        ...(required.right === undefined ? {} : { requiredLabels: required.right }),
        origin: {
          host: request.headers.host ?? "localhost",
          proto: listener.kind === "tls" ? "https" : "http",
          prefix: `/mesh/${peer}/${type}/${name}`,
        },
      })
      return yield* raw((_req, res) => Effect.sync(() => relayResponse(upstream, res)))
    }),
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

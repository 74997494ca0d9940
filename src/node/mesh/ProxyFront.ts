/**
 * `/mesh/<peer>/<type>/<name>/...` answered by the front (src/node/Front.ts): the reverse proxy is the local API's
 * busiest route. Same checks in the same order as the route, same error body; anything the route would refuse (a
 * malformed path, service or label requirement) is left to it, as is an agent's request (the front never takes one).
 */
import { Effect } from "effect"
import * as Forwarding from "../../domain/Forwarding.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import { hasBody, relayResponse } from "../../layers/proxy/Relay.js"
import { PeerProxy } from "../../services/proxy/PeerProxy.js"
import type { Fast } from "../FastAnswer.js"
import { closed } from "../RawHandler.js"

export const fast: Fast = ({ req, res, match, path, query, headers, listener }) => {
  // The whole path, peer and service segments too: `/mesh/x/../..` must not reach any rule that decodes it.
  if (Forwarding.checkPath(path)._tag === "Left") return undefined
  const { peer = "", type = "", name = "" } = match.params
  const service = Forwarding.checkService(type, name)
  if (service._tag === "Left") return undefined
  const required = Forwarding.requiredLabels(req.headers)
  if (required._tag === "Left") return undefined
  return Effect.scoped(
    Effect.gen(function* () {
      const proxy = yield* PeerProxy
      const upstream = yield* proxy.forward({
        peerId: peer,
        type: service.right,
        name,
        path: match.rest,
        query,
        method: req.method ?? "GET",
        headers,
        ...(hasBody(req) ? { body: req } : {}),
        ...(required.right === undefined ? {} : { requiredLabels: required.right }),
        origin: {
          host: req.headers.host ?? "localhost",
          proto: listener.kind === "tls" ? "https" : "http",
          prefix: `/mesh/${peer}/${type}/${name}`,
        },
      })
      relayResponse(upstream, res)
      yield* closed(res)
    }),
  ).pipe(Effect.catchAll((error) => Effect.sync(() => ErrorResponse.write(res, error))))
}

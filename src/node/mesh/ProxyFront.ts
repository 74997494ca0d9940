/**
 * `/mesh/<peer>/<type>/<name>/...` answered on node:http ahead of the platform (`Listener.Front`): the reverse proxy
 * is the local API's busiest route, and the platform's request fiber, the middleware's steps and the route's wrapping
 * cost a calling node as much CPU as the proxying itself. The front takes the plain case only, and answers it as
 * the route does (same checks in the same order, same error body, same metrics); everything else goes on to the
 * platform untouched, where the middleware renders it as always: a request while tracing is on (the middleware makes
 * its span), an agent's token (its scope is the route's to apply), anything the middleware or the route would
 * refuse (a missing or wrong token, a foreign Host or Origin, a node not connected, a malformed path, service or
 * label requirement).
 */
import type { IncomingMessage } from "node:http"
import { performance } from "node:perf_hooks"
import { Context, Effect, Exit, Fiber, FiberRef, FiberRefs, Runtime } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as LocalHosts from "../../domain/LocalHosts.js"
import type { Front } from "../../http/Listener.js"
import { writeError } from "../../layers/proxy/Backend.js"
import { hasBody, relayResponse } from "../../layers/proxy/Relay.js"
import { ApiToken } from "../../services/node/ApiToken.js"
import { NodeLifecycle } from "../../services/node/NodeLifecycle.js"
import { PeerProxy } from "../../services/proxy/PeerProxy.js"
import * as App from "../App.js"
import type { ListenerInfo } from "../Listener.js"
import { BEARER, hostRules, looksLikeAgentToken } from "../Middleware.js"
import { closed, internalError } from "../RawHandler.js"
import type { RequestMetrics } from "../RequestMetrics.js"
import * as Route from "../Route.js"

const LABEL = "mesh_proxy"

export const make = (
  listener: ListenerInfo,
  metrics: RequestMetrics,
): Effect.Effect<Front, never, NodeConfig | ApiToken | NodeLifecycle> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    if (FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentTracerEnabled)) return () => false
    const settings = yield* NodeConfig
    const token = yield* ApiToken
    const lifecycle = yield* NodeLifecycle
    const hosts = hostRules(settings)
    const lookup = Route.table<Route.Requirements<typeof App.routes>>(App.routes)
    const trusted = listener.kind === "socket" || listener.verifiedClient
    const runSync = Runtime.runSyncExit(runtime)
    const run = Runtime.runFork(runtime)

    /** The headers to pass on, the API token removed; undefined when the middleware must decide. */
    const authenticated = (headers: IncomingMessage["headers"]) => {
      const own = headers["x-mesh-authentication"]
      if (Array.isArray(own)) return undefined
      if (own === undefined) {
        if (!trusted) return undefined
      } else {
        const presented = BEARER.exec(own)?.[1]
        if (presented === undefined) return undefined
        const isApiToken = token.matches(presented)
        if (!isApiToken && looksLikeAgentToken(presented)) return undefined
        if (!trusted && !isApiToken) return undefined
      }
      const passed = { ...headers }
      delete passed["x-mesh-authentication"]
      const authorization = BEARER.exec(headers.authorization ?? "")?.[1]
      if (authorization !== undefined && token.matches(authorization)) delete passed.authorization
      return passed
    }

    /** The member's services, when the node is a member connected to the mesh (the route's availability). */
    const connectedMember = (): Context.Context<PeerProxy> | undefined => {
      const phase = runSync(lifecycle.phase)
      if (Exit.isFailure(phase) || phase.value._tag !== "Member") return undefined
      const connected = runSync(lifecycle.connected)
      return Exit.isSuccess(connected) && connected.value ? phase.value.context : undefined
    }

    return (req, res) => {
      const url = req.url ?? "/"
      const q = url.indexOf("?")
      const rawPath = q === -1 ? url : url.slice(0, q)
      if (!rawPath.startsWith("/mesh/")) return false
      const found = lookup(req.method ?? "GET", rawPath)
      if (found._tag !== "Found" || found.match.label !== LABEL) return false
      // A browser cannot reach the socket; elsewhere a page under another name shows it in Host or Origin.
      if (
        listener.kind !== "socket" &&
        (!LocalHosts.hostAllowed(hosts, req.headers.host) || !LocalHosts.originAllowed(hosts, req.headers.origin))
      )
        return false
      const headers = authenticated(req.headers)
      if (headers === undefined) return false
      const member = connectedMember()
      if (member === undefined) return false
      // The whole path, peer and service segments too: `/mesh/x/../..` must not reach any rule that decodes it.
      if (Forwarding.checkPath(rawPath)._tag === "Left") return false
      const { peer = "", type = "", name = "" } = found.match.params
      const service = Forwarding.checkService(type, name)
      if (service._tag === "Left") return false
      const required = Forwarding.requiredLabels(req.headers)
      if (required._tag === "Left") return false

      const started = performance.now()
      const forward = Effect.scoped(
        Effect.gen(function* () {
          const upstream = yield* Context.get(member, PeerProxy).forward({
            peerId: peer,
            type: service.right,
            name,
            path: found.match.rest,
            query: q === -1 ? "" : url.slice(q + 1),
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
      ).pipe(
        Effect.catchAll((error) => Effect.sync(() => writeError(res, error))),
        Effect.catchAllCause((cause) => internalError(res, cause)),
        Effect.zipRight(closed(res)),
        Effect.ensuring(
          Effect.zipRight(
            metrics.leave,
            // 499: the client went away before its answer was done.
            Effect.sync(() =>
              metrics.record(LABEL, res.writableFinished ? res.statusCode : 499, (performance.now() - started) / 1000),
            ),
          ),
        ),
      )
      const fiber = run(Effect.zipRight(metrics.enter, forward))
      // The client went away before its answer was done: the exchange is dropped, which resets the peer's stream.
      res.once("close", () => {
        if (!res.writableFinished) run(Fiber.interrupt(fiber))
      })
      return true
    }
  })

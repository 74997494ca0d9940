/**
 * The local API's busiest routes answered on node:http ahead of the platform (`Listener.Front`): the platform's
 * request fiber, the middleware's steps and the route's wrapping cost a calling node as much CPU as the work itself.
 * The front takes the plain case only, the request the middleware would hand on unchanged: Host and Origin of this
 * machine, the API token or a trusted listener, no agent token (an agent's scope is the route's to apply), the node a
 * member connected to the mesh, tracing off (the middleware makes the span). Who is let in is decided by the same
 * rule as the middleware's (`Admission`). A route's fast answer may decline too (anything the route would refuse).
 * Whatever is declined goes on to the platform untouched and is answered there as always. Requests the front answers
 * are counted and timed as the middleware counts them.
 */
import { performance } from "node:perf_hooks"
import { Context, Effect, Exit, Fiber, FiberRef, FiberRefs, MutableRef, Runtime } from "effect"
import { NodeConfig } from "../config/NodeConfig.js"
import * as LocalHosts from "../domain/LocalHosts.js"
import type { Front } from "../http/Listener.js"
import type { AgentLog } from "../services/agents/AgentLog.js"
import { ApiToken } from "../services/node/ApiToken.js"
import { type MemberServices, NodeLifecycle } from "../services/node/NodeLifecycle.js"
import * as Admission from "./Admission.js"
import * as App from "./App.js"
import type { Fast } from "./FastAnswer.js"
import type { ListenerInfo } from "./Listener.js"
import { hostRules } from "./Middleware.js"
import { closed, internalError } from "./RawHandler.js"
import type { RequestMetrics } from "./RequestMetrics.js"
import * as Route from "./Route.js"

export const make = (
  listener: ListenerInfo,
  metrics: RequestMetrics,
  fast: Readonly<Record<string, Fast>>,
): Effect.Effect<Front, never, NodeConfig | ApiToken | NodeLifecycle | AgentLog> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<AgentLog>()
    if (FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentTracerEnabled)) return () => false
    const settings = yield* NodeConfig
    const token = yield* ApiToken
    const lifecycle = yield* NodeLifecycle
    const hosts = hostRules(settings)
    const lookup = Route.table<Route.Requirements<typeof App.routes>>(App.routes)
    const trusted = listener.kind === "socket" || listener.verifiedClient
    const runSync = Runtime.runSyncExit(runtime)
    const run = Runtime.runFork(runtime)

    /** The member's services, when the node is a member connected to the mesh (the routes' availability). */
    const memberIfConnected: Effect.Effect<Context.Context<MemberServices> | undefined> = Effect.flatMap(
      lifecycle.phase,
      (phase) =>
        phase._tag === "Member"
          ? Effect.map(lifecycle.connected, (connected) => (connected ? phase.context : undefined))
          : Effect.succeed(undefined),
    )
    /**
     * What runs a request: the front's runtime with the member's services added, made once per membership rather
     * than merged into each request's context.
     */
    const memberRuntime = MutableRef.make<
      | {
          readonly member: Context.Context<MemberServices>
          readonly run: ReturnType<typeof Runtime.runFork<AgentLog | MemberServices>>
        }
      | undefined
    >(undefined)
    const runnerFor = (member: Context.Context<MemberServices>) => {
      const cached = MutableRef.get(memberRuntime)
      if (cached?.member === member) return cached.run
      const merged = Runtime.make({
        context: Context.merge(runtime.context, member),
        runtimeFlags: runtime.runtimeFlags,
        fiberRefs: runtime.fiberRefs,
      })
      const runMember = Runtime.runFork(merged)
      MutableRef.set(memberRuntime, { member, run: runMember })
      return runMember
    }

    return (req, res) => {
      const url = req.url ?? "/"
      const q = url.indexOf("?")
      const path = q === -1 ? url : url.slice(0, q)
      const found = lookup(req.method ?? "GET", path)
      if (found._tag !== "Found") return false
      const answer = fast[found.match.label]
      if (answer === undefined || found.route.access === "open" || found.route.access === "strong") return false
      // A browser cannot reach the socket; elsewhere a page under another name shows it in Host or Origin.
      if (
        listener.kind !== "socket" &&
        (!LocalHosts.hostAllowed(hosts, req.headers.host) || !LocalHosts.originAllowed(hosts, req.headers.origin))
      )
        return false
      // Refusals and agent tokens are the middleware's to answer.
      const admission = Admission.admit(req.headers, found.route.access, trusted, token.matches)
      if (admission._tag !== "Admitted") return false
      const headers = admission.headers
      const connected = runSync(memberIfConnected)
      if (Exit.isFailure(connected) || connected.value === undefined) return false
      const member = connected.value
      const work = answer({
        req,
        res,
        match: found.match,
        path,
        query: q === -1 ? "" : url.slice(q + 1),
        headers,
        listener,
      })
      if (work === undefined) return false

      const started = performance.now()
      const label = found.match.label
      const served = work.pipe(
        Effect.catchAllCause((cause) => internalError(res, cause)),
        Effect.zipRight(closed(res)),
        Effect.ensuring(
          Effect.zipRight(
            metrics.leave,
            // 499: the client went away before its answer was done.
            Effect.sync(() =>
              metrics.record(label, res.writableFinished ? res.statusCode : 499, (performance.now() - started) / 1000),
            ),
          ),
        ),
      )
      const fiber = runnerFor(member)(Effect.zipRight(metrics.enter, served))
      // The client went away before its answer was done: the work is dropped (a peer's stream reset, a provider's
      // request ended).
      res.once("close", () => {
        if (!res.writableFinished) run(Fiber.interrupt(fiber))
      })
      return true
    }
  })

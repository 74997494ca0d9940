/**
 * Health and metrics: `/healthz` and `/readyz` answer 200 while the process is up (the spec; agents read readiness
 * from a 503 on `/mcp`), `/readyz` also saying where the node stands; `/metrics` is the Prometheus text, once the
 * node is connected.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, Effect, Option } from "effect"
import { Membership } from "../../services/member/Membership.js"
import { NodeLifecycle } from "../../services/node/NodeLifecycle.js"
import { Metrics } from "../../services/operations/Metrics.js"
import * as Route from "../Route.js"

/** Where the node stands, and why it cannot serve when it cannot (a failed join, a credential that no one accepts). */
const meshState = Effect.gen(function* () {
  const lifecycle = yield* NodeLifecycle
  const phase = yield* lifecycle.phase
  if (phase._tag === "LoginRequired") return { mesh: "login_required" }
  if (phase._tag === "Starting") {
    return { mesh: "joining", ...Option.match(phase.lastError, { onNone: () => ({}), onSome: (why) => ({ why }) }) }
  }
  const mesh = (yield* lifecycle.connected) ? "connected" : "disconnected"
  const problem = yield* Context.get(phase.context as Context.Context<Membership>, Membership).credentialProblem
  return { mesh, ...Option.match(problem, { onNone: () => ({}), onSome: (why) => ({ why }) }) }
})

export const routes = [
  Route.make({
    methods: ["GET", "HEAD"],
    path: "/healthz",
    label: "healthz",
    access: "open",
    availability: "always",
    handler: HttpServerResponse.json({ status: "ok" }),
  }),
  Route.make({
    methods: ["GET", "HEAD"],
    path: "/readyz",
    label: "readyz",
    access: "open",
    availability: "always",
    handler: Effect.flatMap(meshState, (state) => HttpServerResponse.json({ status: "ready", ...state })),
  }),
  Route.make({
    methods: ["GET"],
    path: "/metrics",
    label: "metrics",
    access: "token",
    // The spec's 4.7: every route but the probes and /debug answers 503 until connected. The --metrics-addr
    // listener serves the same figures in every phase, for scrapers.
    availability: "connected",
    handler: Effect.map(Metrics, (metrics) =>
      HttpServerResponse.text(metrics.render(), { contentType: "text/plain; version=0.0.4; charset=utf-8" }),
    ),
  }),
]

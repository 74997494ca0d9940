/**
 * `/mcp` (and `/`, its alias): the node's MCP server over Streamable HTTP. Before the node has an identity it serves
 * the login server; while joining or disconnected it answers 503 (the agent's readiness signal); then the full
 * server. The older SSE transport is refused with 400 and a pointer to Streamable HTTP: a GET without a session is
 * its event stream, `/sse` and `/messages` its routes. The MCP SDK is loaded with the first request that needs it.
 * A plain request to a member connected to the mesh is answered by the front (src/node/Front.ts): `fast`.
 */

import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Option } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import { BadRequest, Unavailable } from "../../domain/Errors.js"
import * as Lazy from "../../platform/Lazy.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { McpGateway } from "../../services/mcp/McpGateway.js"
import { NodeLifecycle } from "../../services/node/NodeLifecycle.js"
import type { Fast } from "../FastAnswer.js"
import { raw } from "../RawHandler.js"
import * as Route from "../Route.js"

const LEGACY = new BadRequest({
  message:
    "the HTTP+SSE MCP transport is not supported: connect with Streamable HTTP (POST /mcp, protocol 2025-06-18 or newer)",
})

const login = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method !== "POST") return yield* LEGACY
  const settings = yield* NodeConfig
  return yield* raw((req, res) =>
    Lazy.effect(
      () => import("./LoginServer.js"),
      (server) =>
        Effect.promise(() => server.serve(req, res, Option.getOrUndefined(settings.controlPlaneUrl), settings.dataDir)),
    ),
  )
})

const handler = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method === "GET" && request.headers["mcp-session-id"] === undefined) return yield* LEGACY
  const lifecycle = yield* NodeLifecycle
  const phase = yield* lifecycle.phase
  if (phase._tag === "LoginRequired") return yield* login
  if (phase._tag === "Starting") return yield* new Unavailable({ message: "this node is joining the mesh" })
  if (!(yield* lifecycle.connected)) return yield* new Unavailable({ message: "not connected to the mesh" })
  const gateway = yield* Effect.provide(McpGateway, phase.context)
  const agent = Option.getOrUndefined(yield* Effect.serviceOption(CurrentAgent))
  return yield* raw((req, res) => gateway.handle(req, res, agent))
})

/** The front's answer: the full server's, for the Streamable HTTP transport's requests (no agent's: see Front). */
export const fast: Fast = ({ req, res, path }) =>
  (path !== "/mcp" && path !== "/") || (req.method === "GET" && req.headers["mcp-session-id"] === undefined)
    ? undefined
    : Effect.flatMap(McpGateway, (gateway) => gateway.handle(req, res))

const mcp = (path: string) =>
  Route.make({
    methods: ["POST", "GET", "DELETE"],
    path,
    label: "mcp",
    access: "token",
    availability: "always",
    handler,
  })

const legacy = (methods: ReadonlyArray<"GET" | "POST">, path: string) =>
  Route.make({ methods, path, label: "mcp", access: "token", availability: "always", handler: Effect.fail(LEGACY) })

export const routes = [
  mcp("/mcp"),
  mcp("/"),
  legacy(["GET"], "/sse"),
  legacy(["POST"], "/messages"),
  legacy(["POST"], "/message"),
]

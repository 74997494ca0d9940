/**
 * The OpenAI-compatible routes: `GET /v1/models` and `POST /v1/chat/completions`, `POST /v1/completions` (answered by
 * Completion, which the front runs too). The API token may come as `Authorization: Bearer` (what OpenAI SDKs send;
 * the local API removes it). Every answer carries `X-Mesh-Provider` (whose answer it is: the serving peer, or this
 * node when it answered itself) and `X-Mesh-Overhead-Ms`; errors use OpenAI's shape.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Clock, Effect, Option } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import type * as Inference from "../../domain/Inference.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { InferenceRouter } from "../../services/inference/InferenceRouter.js"
import { inMember } from "../InMember.js"
import { raw } from "../RawHandler.js"
import * as Route from "../Route.js"
import * as Completion from "./Completion.js"

const models = Effect.gen(function* () {
  const receivedAt = yield* Clock.currentTimeNanos
  const router = yield* InferenceRouter
  const all = yield* router.models
  // An agent sees only the models its scope names.
  const agent = yield* Effect.serviceOption(CurrentAgent)
  const data = Option.isNone(agent)
    ? all
    : all.filter((m) => AgentScope.modelAllowed(agent.value.scope, m.id)._tag === "Allowed")
  return HttpServerResponse.unsafeJson(
    { object: "list", data },
    { headers: { "cache-control": "no-store", ...(yield* Completion.ownHeaders(router.peerId, receivedAt)) } },
  )
})

/** The route's completion, answered as the front answers a plain one (Completion.answer). */
const completion = (path: Inference.CompletionPath) =>
  Effect.gen(function* () {
    const receivedAtNanos = yield* Clock.currentTimeNanos
    const request = yield* HttpServerRequest.HttpServerRequest
    const q = request.url.indexOf("?")
    return yield* raw((req, res) =>
      Completion.answer({
        path,
        req,
        res,
        query: q === -1 ? "" : request.url.slice(q + 1),
        headers: request.headers,
        receivedAtNanos,
      }),
    )
  })

export const routes = [
  Route.make({
    methods: ["GET"],
    path: "/v1/models",
    label: "v1_models",
    access: "token",
    availability: "connected",
    handler: inMember(models),
  }),
  Route.make({
    methods: ["POST"],
    path: "/v1/chat/completions",
    label: "v1_chat_completions",
    access: "token",
    availability: "connected",
    handler: inMember(completion("/v1/chat/completions")),
  }),
  Route.make({
    methods: ["POST"],
    path: "/v1/completions",
    label: "v1_completions",
    access: "token",
    availability: "connected",
    handler: inMember(completion("/v1/completions")),
  }),
]

/**
 * The OpenAI-compatible routes: `GET /v1/models` and `POST /v1/chat/completions`, `POST /v1/completions`. The API
 * token may come as `Authorization: Bearer` (what OpenAI SDKs send; the local API removes it). A completion body is
 * read whole (up to Inference.MAX_BODY_BYTES), its `model` read, and the request handed to the InferenceRouter; the
 * provider's answer streams back as it comes. Every answer carries `X-Mesh-Provider` (whose answer it is: the
 * serving peer, or this node when it answered itself) and `X-Mesh-Overhead-Ms`; errors use OpenAI's shape.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Clock, Effect, Either, Option } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import { type ApiError, BadRequest, Forbidden, PayloadTooLarge } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as Inference from "../../domain/Inference.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as AgentCalls from "../../layers/agents/AgentCalls.js"
import * as Body from "../../layers/inference/Body.js"
import { AGENT_HEADER, CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { InferenceRouter } from "../../services/inference/InferenceRouter.js"
import { inMember } from "../InMember.js"
import { raw } from "../RawHandler.js"
import * as Route from "../Route.js"
import * as OpenAiError from "./OpenAiError.js"

const millis = (nanos: bigint): string => (Number(nanos) / 1e6).toFixed(3)

/** The headers of an answer the node made itself: it is the provider, and all of the time is its own. */
const ownHeaders = (peerId: string, receivedAt: bigint) =>
  Effect.map(Clock.currentTimeNanos, (now) => ({
    "x-mesh-provider": peerId,
    "x-mesh-overhead-ms": millis(now - receivedAt),
  }))

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
    { headers: { "cache-control": "no-store", ...(yield* ownHeaders(router.peerId, receivedAt)) } },
  )
})

const completion = (path: Inference.CompletionPath) =>
  Effect.gen(function* () {
    const receivedAtNanos = yield* Clock.currentTimeNanos
    const request = yield* HttpServerRequest.HttpServerRequest
    const router = yield* InferenceRouter
    return yield* Effect.gen(function* () {
      const body = yield* Body.read(NodeHttpServerRequest.toIncomingMessage(request), Inference.MAX_BODY_BYTES).pipe(
        Effect.mapError((error) =>
          error._tag === "TooLarge"
            ? new PayloadTooLarge({ message: `the request body is larger than ${error.limit} bytes` })
            : new BadRequest({ message: "the request body was cut off" }),
        ),
      )
      const fields = Inference.parseCompletion(body)
      if (Either.isLeft(fields)) return yield* new BadRequest({ message: fields.left })
      const required = Forwarding.requiredLabels(request.headers)
      if (Either.isLeft(required)) return yield* new BadRequest({ message: required.left })
      const agent = yield* Effect.serviceOption(CurrentAgent)
      const startedMs = yield* Clock.currentTimeMillis
      const seen = {
        peer: "",
        service: "",
        target: fields.right.model,
        startedMs,
        bytesIn: body.byteLength,
        bytesOut: 0,
      }
      if (Option.isSome(agent)) {
        const decision = AgentScope.modelAllowed(agent.value.scope, fields.right.model)
        if (decision._tag === "Denied") {
          yield* AgentCalls.record({ ...seen, status: 403, refusal: decision.reason })
          return yield* new Forbidden({ message: decision.reason })
        }
      }
      // `X-Mesh-Agent` is the node's to set: a local backend gets the token's agent id, whatever the client sent
      // (a peer's backend gets it from the serving node, which verified the token).
      const headers = { ...request.headers, [AGENT_HEADER]: Option.isSome(agent) ? agent.value.scope.agent : undefined }
      const q = request.url.indexOf("?")
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const answer = yield* router
            .complete({
              path,
              query: q === -1 ? "" : request.url.slice(q + 1),
              model: fields.right.model,
              stream: fields.right.stream,
              body,
              headers,
              ...(required.right === undefined ? {} : { requiredLabels: required.right }),
              receivedAtNanos,
            })
            .pipe(
              // A model nobody serves, no provider left: the agent's call is logged as failed (or refused) too.
              Effect.tapError((error) =>
                AgentCalls.record({ ...seen, status: ErrorResponse.parts(error).status, refusal: error.message }),
              ),
            )
          yield* AgentCalls.record({ ...seen, peer: answer.provider, status: answer.status })
          return yield* raw((_req, res) => answer.send(res))
        }),
      )
    }).pipe(
      Effect.catchAll((error: ApiError) =>
        Effect.map(ownHeaders(router.peerId, receivedAtNanos), (headers) =>
          ErrorResponse.fromApiError(error, OpenAiError.render).pipe(
            HttpServerResponse.setHeaders(
              // The rest of an oversized body is not read: the connection cannot carry another request.
              error._tag === "PayloadTooLarge" ? { ...headers, connection: "close" } : headers,
            ),
          ),
        ),
      ),
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

/**
 * A completion (`POST /v1/chat/completions`, `POST /v1/completions`) answered on the Node response, by its route and
 * by the front (src/node/Front.ts) alike. The body is read whole (up to Inference.MAX_BODY_BYTES), its `model` read,
 * an agent's scope applied, and the request handed to the InferenceRouter; the provider's answer streams back as it
 * comes. Every answer carries `X-Mesh-Provider` and `X-Mesh-Overhead-Ms`; errors use OpenAI's shape.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Clock, Effect, Either, Option } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import { type ApiError, BadRequest, Forbidden, PayloadTooLarge } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as Inference from "../../domain/Inference.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as AgentCalls from "../../layers/agents/AgentCalls.js"
import * as Body from "../../layers/inference/Body.js"
import type { AgentLog } from "../../services/agents/AgentLog.js"
import { AGENT_HEADER, CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { InferenceRouter } from "../../services/inference/InferenceRouter.js"
import type { Fast } from "../FastAnswer.js"
import * as OpenAiError from "./OpenAiError.js"

const millis = (nanos: bigint): string => (Number(nanos) / 1e6).toFixed(3)

/** The headers of an answer the node made itself: it is the provider, and all of the time is its own. */
export const ownHeaders = (peerId: string, receivedAt: bigint) =>
  Effect.map(Clock.currentTimeNanos, (now) => ({
    "x-mesh-provider": peerId,
    "x-mesh-overhead-ms": millis(now - receivedAt),
  }))

export interface Request {
  readonly path: Inference.CompletionPath
  readonly req: IncomingMessage
  readonly res: ServerResponse
  /** The raw query, without `?`. */
  readonly query: string
  /** The client's headers, the API token removed. */
  readonly headers: Forwarding.Headers
  /** When the local API received the request (Clock nanos). */
  readonly receivedAtNanos: bigint
}

/** Answers the completion; completes when the answer is written or the client has gone. */
export const answer = ({
  path,
  req,
  res,
  query,
  headers,
  receivedAtNanos,
}: Request): Effect.Effect<void, never, InferenceRouter | AgentLog> =>
  Effect.gen(function* () {
    const router = yield* InferenceRouter
    return yield* Effect.gen(function* () {
      const body = yield* Body.read(req, Inference.MAX_BODY_BYTES).pipe(
        Effect.mapError((error) =>
          error._tag === "TooLarge"
            ? new PayloadTooLarge({ message: `the request body is larger than ${error.limit} bytes` })
            : new BadRequest({ message: "the request body was cut off" }),
        ),
      )
      const fields = Inference.parseCompletion(body)
      if (Either.isLeft(fields)) return yield* new BadRequest({ message: fields.left })
      const required = Forwarding.requiredLabels(headers)
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
      yield* Effect.scoped(
        Effect.gen(function* () {
          const answer = yield* router
            .complete({
              path,
              query,
              model: fields.right.model,
              stream: fields.right.stream,
              body,
              // `X-Mesh-Agent` is the node's to set: a local backend gets the token's agent id, whatever the client
              // sent (a peer's backend gets it from the serving node, which verified the token).
              headers: { ...headers, [AGENT_HEADER]: Option.isSome(agent) ? agent.value.scope.agent : undefined },
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
          yield* answer.send(res)
        }),
      )
    }).pipe(
      Effect.catchAll((error: ApiError) =>
        Effect.flatMap(ownHeaders(router.peerId, receivedAtNanos), (own) =>
          Effect.sync(() =>
            // The rest of an oversized body is not read: the connection cannot carry another request.
            OpenAiError.write(res, error, error._tag === "PayloadTooLarge" ? { ...own, connection: "close" } : own),
          ),
        ),
      ),
    )
  })

/** The front's answer to a plain completion (no agent: its scope is the route's to apply). */
export const fast =
  (path: Inference.CompletionPath): Fast =>
  ({ req, res, query, headers }) =>
    Effect.flatMap(Clock.currentTimeNanos, (receivedAtNanos) =>
      answer({ path, req, res, query, headers, receivedAtNanos }),
    )

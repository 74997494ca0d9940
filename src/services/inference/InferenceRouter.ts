/**
 * OpenAI-compatible inference for the node's local clients: the models every reachable provider serves, and
 * completions sent to a provider of the requested model. Providers on this node come first; providers on peers are
 * ranked by the labels the caller requires, the operator's floor and their load, and reached through the proxy. A
 * provider that is busy or unreachable (429, 502, 503, 504, no connection) is cooled down and the next one tried;
 * any other answer is the answer.
 */
import type { ServerResponse } from "node:http"
import { Context, type Effect, type Scope } from "effect"
import type { ModelNotFound, NoAvailableProvider, NoEligibleProvider } from "../../domain/Errors.js"
import type * as Forwarding from "../../domain/Forwarding.js"
import type { CompletionPath, ModelEntry } from "../../domain/Inference.js"

export interface CompletionRequest {
  readonly path: CompletionPath
  /** The client's raw query, without `?` (passed on). */
  readonly query: string
  readonly model: string
  readonly stream: boolean
  /** The body as the client sent it, held once and sent again, unchanged, to each provider tried. */
  readonly body: Uint8Array
  /** The client's headers (the API token already removed by the local API). */
  readonly headers: Forwarding.Headers
  /** `X-Mesh-Required-Labels`: only providers attesting at least one pair may serve. */
  readonly requiredLabels?: Readonly<Record<string, string>>
  /** When the local API received the request (Clock nanos): the start of `X-Mesh-Overhead-Ms`. */
  readonly receivedAtNanos: bigint
}

export type RoutingError = ModelNotFound | NoEligibleProvider | NoAvailableProvider

/** A provider's answer, head received, body not yet read. */
export interface Answer {
  /** The serving peer's id (this node's own for a local provider). */
  readonly provider: string
  readonly local: boolean
  readonly status: number
  /**
   * Writes the answer to the client as it arrives, with `X-Mesh-Provider` and `X-Mesh-Overhead-Ms`, and completes
   * when the client's response has closed (answer done, or the client gone: the provider's request is then ended).
   */
  readonly send: (res: ServerResponse) => Effect.Effect<void>
}

export interface InferenceRouterService {
  /** This node's peer id, which answers carry in `X-Mesh-Provider` when the node answered itself. */
  readonly peerId: string
  /** The union of every reachable provider's models, sorted by id (remote lists cached for 30 s). */
  readonly models: Effect.Effect<ReadonlyArray<ModelEntry>>
  /**
   * Finds a provider that answers the request. The provider's request lives as long as the scope: closing it before
   * the answer was read through ends that request (a local backend's connection, a peer's stream).
   */
  readonly complete: (request: CompletionRequest) => Effect.Effect<Answer, RoutingError, Scope.Scope>
}

export class InferenceRouter extends Context.Tag("mesh/InferenceRouter")<InferenceRouter, InferenceRouterService>() {}

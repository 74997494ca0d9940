/**
 * What a route answers on node:http when the front (src/node/Front.ts) takes its request: the request as the
 * middleware would have handed it on, and the answer's effect. A module of its own so that the routes' folders, which
 * App gathers, need not import the front, which imports App.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Effect } from "effect"
import type { AgentLog } from "../services/agents/AgentLog.js"
import type { MemberServices } from "../services/node/NodeLifecycle.js"
import type { ListenerInfo } from "./Listener.js"
import type * as Route from "./Route.js"

/** A request the middleware would have handed to its route as it is. */
export interface Plain {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly match: Route.Match
  /** The raw path, without the query. */
  readonly path: string
  /** The raw query, without `?`. */
  readonly query: string
  /** The request's headers with the API token removed, as the middleware passes them on. */
  readonly headers: IncomingMessage["headers"]
  readonly listener: ListenerInfo
}

/**
 * A route's answer on node:http, or undefined to leave the request to the platform. The effect writes the whole
 * answer, errors included, and completes when it is written.
 */
export type Fast = (plain: Plain) => Effect.Effect<void, never, MemberServices | AgentLog> | undefined

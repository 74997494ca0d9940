/**
 * Runs a handler that writes the Node response itself (the MCP SDK's transport, a streaming proxy) inside an Effect
 * route: the route completes when the response is finished or the connection closed, and reports the status the
 * handler wrote, so metrics stay right. The platform skips writing our returned response, since it has ended.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { type Cause, Effect } from "effect"

/** Completes when the response is finished or its connection closed. */
export const closed = (res: ServerResponse): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (res.closed) return resume(Effect.void)
    const done = () => resume(Effect.void)
    res.once("close", done)
    return Effect.sync(() => res.off("close", done))
  })

/** A handler's unexpected failure: logged, and answered 500 unless the answer had begun (then it is ended). */
export const internalError = (res: ServerResponse, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.logError("local API handler failed", cause),
    Effect.sync(() => {
      if (res.headersSent) return void res.end()
      res.writeHead(500, { "content-type": "application/json", "cache-control": "no-store" })
      res.end(JSON.stringify({ error: "internal", message: "internal error" }))
    }),
  )

export const raw = <R>(
  handle: (req: IncomingMessage, res: ServerResponse) => Effect.Effect<void, unknown, R>,
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const req = NodeHttpServerRequest.toIncomingMessage(request)
    const res = NodeHttpServerRequest.toServerResponse(request)
    yield* handle(req, res).pipe(Effect.catchAllCause((cause) => internalError(res, cause)))
    yield* closed(res)
    return HttpServerResponse.empty({ status: res.statusCode })
  })

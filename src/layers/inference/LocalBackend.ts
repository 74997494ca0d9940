/**
 * Completions for this node's own inference services: the request goes straight to the service's `target_url`
 * over keep-alive connections (no mesh hop), with the same headers a peer's request would carry to it. The request
 * belongs to the caller's scope: closed before the answer was read through, the backend request is destroyed, so the
 * backend sees its client go away.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { Effect, type Scope } from "effect"
import * as Forwarding from "../../domain/Forwarding.js"
import type { ServiceSpec } from "../../domain/NodeFile.js"
import type * as Deadlines from "../../platform/Deadlines.js"
import * as Finalizer from "../../platform/Finalizer.js"

export interface LocalBackend {
  /** Whether the inference service has a backend this node can call (a `target_url`). */
  readonly has: (service: string) => boolean
  /**
   * Sends the request; completes with the answer's head. Fails with a short reason when there is no answer, or none
   * before `deadline` falls due.
   */
  readonly send: (
    service: string,
    path: string,
    query: string,
    headers: Forwarding.OutgoingHeaders,
    body: Uint8Array,
    deadline?: Deadlines.Expiry,
  ) => Effect.Effect<IncomingMessage, string, Scope.Scope>
}

const describe = (error: Error): string => {
  const code = (error as { code?: unknown }).code
  return typeof code === "string" ? code : error.message.slice(0, 200)
}

const ignore = () => {}

export const make = (services: ReadonlyArray<ServiceSpec>): Effect.Effect<LocalBackend, never, Scope.Scope> =>
  Effect.gen(function* () {
    const agents = yield* Effect.acquireRelease(
      Effect.sync(() => ({ http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) })),
      (a) =>
        Effect.sync(() => {
          a.http.destroy()
          a.https.destroy()
        }),
    )
    // Each target parsed once.
    const targets = new Map(
      services.flatMap((s) =>
        s.type === "inference" && s.target_url !== undefined
          ? [[s.name, Forwarding.target(s.target_url)] as const]
          : [],
      ),
    )

    const send: LocalBackend["send"] = (service, path, query, headers, body, deadline) =>
      Effect.gen(function* () {
        const target = targets.get(service)
        if (target === undefined) return yield* Effect.fail(`the inference service ${service} has no target_url`)
        let response: IncomingMessage | undefined
        const https = target.protocol === "https:"
        const outgoing = yield* Finalizer.acquireSync(
          () => {
            const req = (https ? httpsRequest : httpRequest)({
              protocol: target.protocol,
              hostname: target.hostname,
              port: target.port,
              path: Forwarding.backendPath(target, path, query),
              method: "POST",
              headers: { ...headers, host: target.host },
              agent: https ? agents.https : agents.http,
            })
            // Failures after the answer began reach the response's reader; none may go unheard.
            req.on("error", ignore)
            return req
          },
          (req) => {
            // An answer read to its end leaves the connection to the agent; anything else is abandoned.
            if (response?.complete === true) return
            response?.destroy()
            req.destroy()
          },
        )
        return yield* Effect.async<IncomingMessage, string>((resume) => {
          let settled = false
          let unwatch = ignore
          const onResponse = (answer: IncomingMessage) => {
            response = answer
            answer.on("error", ignore)
            if (!settled) resume(Effect.succeed(answer))
            settled = true
            unwatch()
          }
          const onError = (error: Error) => {
            if (!settled) resume(Effect.fail(describe(error)))
            settled = true
            unwatch()
          }
          outgoing.once("response", onResponse)
          outgoing.once("error", onError)
          // Given up on: the scope's release destroys the request.
          unwatch = deadline?.watch(() => onError(new Error("no response head in time"))) ?? ignore
          if (settled) return
          outgoing.end(body)
          return Effect.sync(() => {
            unwatch()
            outgoing.off("response", onResponse)
            outgoing.off("error", onError)
          })
        })
      })

    return { has: (service) => targets.has(service), send }
  })

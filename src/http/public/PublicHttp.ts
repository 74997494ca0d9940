/** Handlers of the public group. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { Unavailable } from "../../domain/Errors.js"
import { Oidc } from "../../services/enrollment/Oidc.js"
import { KeyRing } from "../../services/identity/KeyRing.js"
import { DatabaseHealth } from "../../services/operations/DatabaseHealth.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { Info } from "../../services/routers/Info.js"
import { ControlPlaneApi } from "../Api.js"
import * as Protobuf from "../Protobuf.js"

export const PublicHttpLive = HttpApiBuilder.group(ControlPlaneApi, "public", (handlers) =>
  Effect.gen(function* () {
    const database = yield* DatabaseHealth
    const metrics = yield* Metrics
    const keyRing = yield* KeyRing
    const info = yield* Info
    const oidc = yield* Oidc
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        Effect.flatMap(database.check, (reachable) =>
          reachable
            ? Effect.map(oidc.keys, (issuers) => ({
                status: "ready" as const,
                // An issuer's outage is every replica's: stale keys are reported, never a reason to take traffic away.
                issuer_keys: issuers.map((i) => ({
                  issuer: i.issuer,
                  keys: i.state,
                  read_at: i.readAtMs === undefined ? null : new Date(i.readAtMs).toISOString(),
                  problem: i.problem ?? null,
                })),
              }))
            : new Unavailable({ message: "database unavailable" }),
        ),
      )
      .handle("metrics", () => Effect.sync(() => metrics.render()))
      .handle("info", () =>
        Effect.map(info.body, (body) => HttpServerResponse.uint8Array(body, { contentType: Protobuf.CONTENT_TYPE })),
      )
      .handle("keys", () =>
        Effect.map(keyRing.keysBody, (body) =>
          HttpServerResponse.uint8Array(body, { contentType: Protobuf.CONTENT_TYPE }),
        ),
      )
  }),
)

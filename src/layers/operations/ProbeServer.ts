/**
 * The small HTTP listener routers and nodes serve on their metrics address: `/healthz` (the process is up),
 * `/readyz` (it can do its job) and `/metrics` (Prometheus text). No authentication: it reveals no secrets.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer } from "effect"
import type { ListenAddress } from "../../config/ControlPlaneConfig.js"
import * as CanonicalPath from "../../http/CanonicalPath.js"
import * as ErrorResponse from "../../http/ErrorResponse.js"
import * as Listener from "../../http/Listener.js"
import * as RouteTable from "../../http/RouteTable.js"
import { Metrics } from "../../services/operations/Metrics.js"

export const layer = (address: ListenAddress, ready: Effect.Effect<boolean>) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const metrics = yield* Metrics
      const router = HttpRouter.empty.pipe(
        HttpRouter.get("/healthz", HttpServerResponse.json({ status: "ok" })),
        HttpRouter.get(
          "/readyz",
          Effect.flatMap(ready, (ok) =>
            ok
              ? HttpServerResponse.json({ status: "ready" })
              : Effect.succeed(ErrorResponse.body(503, "unavailable", "not ready")),
          ),
        ),
        HttpRouter.get(
          "/metrics",
          Effect.sync(() =>
            HttpServerResponse.text(metrics.render(), { contentType: "text/plain; version=0.0.4; charset=utf-8" }),
          ),
        ),
      )
      const app = yield* HttpRouter.toHttpApp(router).pipe(HttpRouter.withRouterConfig(CanonicalPath.routerConfig))
      return Listener.serve(
        HttpServer.serve(
          RouteTable.gate(RouteTable.fromRouter(router))(app).pipe(
            Effect.catchAll(() => Effect.succeed(ErrorResponse.body(404, "not_found", "no such route"))),
          ),
        ),
        { host: address.host, port: address.port },
      )
    }),
  )

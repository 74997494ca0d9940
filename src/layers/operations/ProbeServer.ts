/**
 * The small HTTP listener routers and nodes serve on their metrics address: `/healthz` (the process is up),
 * `/readyz` (it can do its job) and `/metrics` (Prometheus text). No authentication: it reveals no secrets.
 */
import { createServer } from "node:http"
import { HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import type { ListenAddress } from "../../config/ControlPlaneConfig.js"
import { Metrics } from "../../services/operations/Metrics.js"

export const app = (ready: Effect.Effect<boolean>) =>
  Effect.map(Metrics, (metrics) =>
    HttpRouter.empty.pipe(
      HttpRouter.get("/healthz", HttpServerResponse.json({ status: "ok" })),
      HttpRouter.get(
        "/readyz",
        Effect.flatMap(ready, (ok) =>
          ok
            ? HttpServerResponse.json({ status: "ready" })
            : HttpServerResponse.json({ error: "unavailable", message: "not ready" }, { status: 503 }),
        ),
      ),
      HttpRouter.get(
        "/metrics",
        Effect.sync(() =>
          HttpServerResponse.text(metrics.render(), { contentType: "text/plain; version=0.0.4; charset=utf-8" }),
        ),
      ),
      HttpRouter.catchAll(() =>
        HttpServerResponse.json({ error: "not_found", message: "no such route" }, { status: 404 }),
      ),
    ),
  )

export const layer = (address: ListenAddress, ready: Effect.Effect<boolean>) =>
  Layer.unwrapEffect(
    Effect.map(app(ready), (probes) =>
      HttpServer.serve(probes).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { host: address.host, port: address.port })),
      ),
    ),
  )

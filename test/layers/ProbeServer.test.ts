import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as MetricsLive from "../../src/layers/operations/MetricsLive.js"
import * as ProbeServer from "../../src/layers/operations/ProbeServer.js"
import * as Raw from "../support/rawHttp.js"
import { spellingsOf } from "../support/spellings.js"

describe("the probe listener of routers and nodes", () => {
  it.scoped("answers its three routes under their one spelling, HEAD as GET, and 404 for every other spelling", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(
        ProbeServer.layer({ host: "127.0.0.1", port: 0 }, Effect.succeed(true)).pipe(Layer.provide(MetricsLive.layer)),
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      const url = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
      const status = (method: string, target: string) =>
        Effect.promise(() => Raw.send(url, { method, target })).pipe(Effect.map((o) => Raw.expectAnswer(o).status))
      for (const path of ["/healthz", "/readyz", "/metrics"]) {
        expect(yield* status("GET", path), path).toBe(200)
        expect(yield* status("HEAD", path), path).toBe(200)
        expect(yield* status("POST", path), path).toBe(404)
        for (const spelling of spellingsOf(path)) {
          expect(yield* status("GET", spelling.target), `${spelling.name}: ${spelling.target}`).toBe(404)
        }
      }
    }),
  )
})

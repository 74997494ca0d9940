import { createServer } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Redacted, TestClock, TestServices } from "effect"
import * as NodeConfig from "../../src/config/NodeConfig.js"
import * as LocalServicesLive from "../../src/layers/local/LocalServicesLive.js"
import * as StdioServersLive from "../../src/layers/mcp/StdioServersLive.js"
import { type LocalService, LocalServices } from "../../src/services/local/LocalServices.js"
import { eventually } from "../support/eventually.js"

/** An inference backend that fails (status 500 + the request's number, so each answer is told apart) until `up`. */
const backend = Effect.acquireRelease(
  Effect.async<{ server: ReturnType<typeof createServer>; state: { hits: number; up: boolean; models: string[] } }>(
    (resume) => {
      const state = { hits: 0, up: false, models: ["tiny-1"] }
      const server = createServer((_req, res) => {
        state.hits += 1
        if (!state.up) {
          res.writeHead(500 + state.hits)
          return res.end()
        }
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ object: "list", data: state.models.map((id) => ({ id })) }))
      })
      server.listen(0, "127.0.0.1", () => {
        resume(Effect.succeed({ server, state }))
      })
    },
  ),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    }),
)

const view = (s: Option.Option<LocalService>) =>
  Option.map(s, (service) => ({ state: service.state, keys: service.keys, error: Option.getOrNull(service.lastError) }))

describe("LocalServices", () => {
  it.scoped(
    "withholds a silent backend, probes again after 5 s doubling, publishes it once it answers, re-probes every minute",
    () =>
      Effect.gen(function* () {
        const { server, state } = yield* backend
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        const settings = NodeConfig.make({
          dataDir: "unused",
          apiToken: Redacted.make("unused-token-0000"),
          file: {
            labels: {},
            egress: { require_labels: {} },
            services: [
              { name: "llm", type: "inference", description: "", target_url: `http://127.0.0.1:${port}`, env: {} },
            ],
          },
        })
        const context = yield* Layer.build(
          LocalServicesLive.layer.pipe(
            Layer.provide(StdioServersLive.layer),
            Layer.provide(Layer.succeed(NodeConfig.NodeConfig, settings)),
          ),
        )
        const local = Context.get(context, LocalServices)
        const lookup = Effect.map(local.lookup("inference", "llm"), view)
        const failedWith = (status: number) =>
          eventually(lookup, (s) => Option.getOrNull(s)?.error === `GET /v1/models: HTTP status ${status}`, {
            what: `probe answered ${status}`,
          })

        yield* failedWith(501)
        expect(yield* local.published).toEqual([])
        yield* TestClock.adjust(Duration.millis(4_999))
        // Not due yet: a probe now would have reached the backend within this real-time pause.
        yield* TestServices.provideLive(Effect.sleep(Duration.millis(200)))
        expect(state.hits).toBe(1)
        yield* TestClock.adjust(Duration.millis(1))
        yield* failedWith(502)
        yield* TestClock.adjust(Duration.seconds(10))
        yield* failedWith(503)

        state.up = true
        yield* TestClock.adjust(Duration.seconds(20))
        yield* eventually(lookup, (s) => Option.getOrNull(s)?.state === "published", { what: "published" })
        expect(yield* lookup).toEqual(Option.some({ state: "published", keys: ["tiny-1"], error: null }))
        expect((yield* local.published).map((s) => s.name)).toEqual(["llm"])

        // Published services are probed again every minute; their keys follow the backend.
        state.models = ["tiny-1", "tiny-2"]
        yield* TestClock.adjust(LocalServicesLive.REPROBE)
        yield* eventually(lookup, (s) => Option.getOrNull(s)?.keys.length === 2, { what: "keys updated" })

        // A backend that stops answering is withheld again, and the backoff starts over at 5 s.
        state.up = false
        yield* TestClock.adjust(LocalServicesLive.REPROBE)
        yield* failedWith(506)
        expect(yield* local.published).toEqual([])
        yield* TestClock.adjust(Duration.seconds(5))
        yield* failedWith(507)
      }),
  )

  it.scoped("counts requests in flight per service while their scopes are open", () =>
    Effect.gen(function* () {
      const settings = NodeConfig.make({
        dataDir: "unused",
        apiToken: Redacted.make("unused-token-0000"),
        file: {
          labels: {},
          egress: { require_labels: {} },
          services: [{ name: "tools", type: "mcp", description: "", command: ["mesh-test-no-such-program"], env: {} }],
        },
      })
      const context = yield* Layer.build(
        LocalServicesLive.layer.pipe(
          Layer.provide(StdioServersLive.layer),
          Layer.provide(Layer.succeed(NodeConfig.NodeConfig, settings)),
        ),
      )
      const local = Context.get(context, LocalServices)
      const inFlight = Effect.map(local.lookup("mcp", "tools"), (s) => Option.map(s, (x) => x.inFlight))
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* local.track("mcp", "tools")
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* local.track("mcp", "tools")
              expect(yield* inFlight).toEqual(Option.some(2))
            }),
          )
          expect(yield* inFlight).toEqual(Option.some(1))
        }),
      )
      expect(yield* inFlight).toEqual(Option.some(0))
      // A stdio server whose program cannot be started is withheld, saying why.
      const withheld = yield* eventually(
        Effect.map(local.lookup("mcp", "tools"), view),
        (s) => Option.getOrNull(s)?.error?.includes("could not be started") === true,
      )
      expect(Option.map(withheld, (s) => s.state)).toEqual(Option.some("withheld"))
    }),
  )
})

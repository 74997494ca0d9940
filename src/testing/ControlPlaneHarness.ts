/**
 * The control plane in the calling process: real HTTP on an ephemeral loopback port, a real database (sqlite in
 * memory by default, or any DatabaseConfig such as a postgres schema from TestDatabase), and whatever Clock the
 * caller runs under, so `TestClock.adjust` drives rotation, leases and retention in tests.
 *
 * Public API: integrations can test themselves against a real control plane with it.
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Context, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted, type Scope } from "effect"
import * as ControlPlaneConfig from "../config/ControlPlaneConfig.js"
import { ControlPlaneApi } from "../http/Api.js"
import * as ControlPlaneLive from "../layers/ControlPlaneLive.js"
import * as Tracing from "../layers/observability/Tracing.js"

export interface ControlPlaneHarness {
  /** Base URL, `http://127.0.0.1:<port>`. */
  readonly url: string
  readonly settings: ControlPlaneConfig.ControlPlaneSettings
  /** The operator bearer token the harness configured. */
  readonly adminToken: string
  /** A typed client of the JSON API, authenticated as the operator (admin token). */
  readonly api: ControlPlaneClient
  /** A typed client authenticated with another bearer (an ID token for the user API, a wrong token). */
  readonly as: (bearer: string) => Effect.Effect<ControlPlaneClient>
  /** The control plane's own services, for assertions that look behind the API. */
  readonly context: Context.Context<Layer.Layer.Success<ReturnType<typeof ControlPlaneLive.layer>>>
}

/** A typed HttpApi client of a control plane at `url`, over node:http, sending `bearer` when given. */
export const client = (url: string, bearer?: string) =>
  HttpApiClient.make(ControlPlaneApi, {
    baseUrl: url,
    ...(bearer === undefined ? {} : { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(bearer)) }),
  }).pipe(Effect.provide(NodeHttpClient.layer))

export type ControlPlaneClient = Effect.Effect.Success<ReturnType<typeof client>>

export type Overrides = Partial<ControlPlaneConfig.ControlPlaneSettings> & {
  /** Tracing for this control plane (`Tracing.layer`); off by default. */
  readonly tracing?: Layer.Layer<never>
  /** `memory`: mesh events are recorded but never reach the mesh, as if every one was lost. */
  readonly events?: ControlPlaneLive.Options["events"]
  /** Where the control plane's log lines go, for a test that reads them; default: the console. */
  readonly logger?: Logger.Logger<unknown, void>
}

export const DEFAULT_ISSUER = "http://127.0.0.1:1/unused-issuer"
export const DEFAULT_ADMIN_TOKEN = "harness-admin-token"

/** Starts a control plane for the life of the scope. */
export const make = ({
  tracing = Tracing.off,
  events,
  logger,
  ...overrides
}: Overrides = {}): Effect.Effect<ControlPlaneHarness, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const adminToken = Option.getOrElse(overrides.adminToken ?? Option.none(), () => Redacted.make(DEFAULT_ADMIN_TOKEN))
    const settings = ControlPlaneConfig.make({
      issuers: [DEFAULT_ISSUER],
      database: ControlPlaneConfig.sqliteMemory,
      ...overrides,
      bindAddress: overrides.bindAddress ?? { host: "127.0.0.1", port: 0 },
      // Tests drive many requests from one address; they opt in to rate limiting explicitly.
      enrollRateLimit: overrides.enrollRateLimit ?? { perSecond: 0, burst: 0 },
      // Tests move a TestClock by days: a read of the issuer's keys every five minutes of it is real HTTP each time.
      oidcKeysMaxAge: overrides.oidcKeysMaxAge ?? Duration.hours(24),
      adminToken: Option.some(adminToken),
      // The caller's clock may be a TestClock that nobody advances once the test is over: cut requests at once.
      shutdownGrace: overrides.shutdownGrace ?? Duration.zero,
    })
    // Quiet by default: a test reads answers, not the server's info lines; pass `logLevel` to see them.
    const context = yield* Layer.build(
      ControlPlaneLive.layer(settings, events === undefined ? {} : { events }).pipe(
        Layer.provide(Logger.minimumLogLevel(overrides.logLevel ?? LogLevel.Warning)),
        Layer.provide(logger === undefined ? Layer.empty : Logger.replace(Logger.defaultLogger, logger)),
        Layer.provide(tracing),
      ),
    )
    const server = Context.get(context, HttpServer.HttpServer)
    const address = server.address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("control plane is not on TCP")
    const url = `http://127.0.0.1:${address.port}`
    const api = yield* client(url, Redacted.value(adminToken))
    return { url, settings, adminToken: Redacted.value(adminToken), api, as: (bearer) => client(url, bearer), context }
  })

/** The Oidc layer alone, built in the test's scope (its key readers are fibers of that scope), and what it logs. */
import { Context, type Duration, Effect, Layer, Logger, LogLevel } from "effect"
import * as ControlPlaneConfig from "../../src/config/ControlPlaneConfig.js"
import * as OidcLive from "../../src/layers/enrollment/OidcLive.js"
import * as MetricsLive from "../../src/layers/operations/MetricsLive.js"
import { Oidc } from "../../src/services/enrollment/Oidc.js"
import { Metrics } from "../../src/services/operations/Metrics.js"

export const AUDIENCE = "mesh-test-audience"

export interface OidcOptions {
  readonly allowedAudiences?: ReadonlyArray<string>
  readonly keysMaxAge?: Duration.Duration
}

export const oidcFor = (issuers: ReadonlyArray<string>, options: OidcOptions = {}) =>
  Effect.gen(function* () {
    const logged: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, LogLevel.Info)) logged.push(`${logLevel.label} ${String(message)}`)
    })
    const metrics = MetricsLive.make()
    const settings = ControlPlaneConfig.make({
      issuers,
      database: ControlPlaneConfig.sqliteMemory,
      allowedAudiences: options.allowedAudiences ?? [AUDIENCE],
      ...(options.keysMaxAge === undefined ? {} : { oidcKeysMaxAge: options.keysMaxAge }),
    })
    const context = yield* Layer.build(
      OidcLive.layer.pipe(
        Layer.provide(Layer.succeed(ControlPlaneConfig.ControlPlaneConfig, settings)),
        Layer.provide(Layer.succeed(Metrics, metrics)),
        Layer.provide(Logger.replace(Logger.defaultLogger, capture)),
      ),
    )
    return {
      oidc: Context.get(context, Oidc),
      metrics,
      logged: Effect.sync(() => [...logged]),
    }
  })

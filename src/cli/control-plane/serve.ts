/** Runs the control plane server until interrupted (SIGINT/SIGTERM close the listener and the database cleanly). */
import type * as Command from "@effect/cli/Command"
import { Duration, Effect, Layer, Option } from "effect"
import { type ControlPlaneSettings, SHUTDOWN_GRACE } from "../../config/ControlPlaneConfig.js"
import * as KeyDurations from "../../domain/KeyDurations.js"
import * as ControlPlaneLive from "../../layers/ControlPlaneLive.js"
import * as Logging from "../../layers/Logging.js"
import * as Tracing from "../../layers/observability/Tracing.js"
import * as Flag from "../flags.js"
import { UsageError } from "../run.js"
import { resolveDatabase, type server } from "./flags.js"

export type ServerFlags = Command.Command.ParseConfig<typeof server>

export const settingsFromFlags = (flags: ServerFlags) =>
  Effect.gen(function* () {
    const issuers = Option.match(flags.issuer, { onNone: () => [], onSome: Flag.list })
    if (issuers.length === 0) {
      return yield* new UsageError({ message: "--issuer is required (or MESH_OIDC_ISSUER)" })
    }
    const durations = {
      keyRotationInterval: flags.keyRotationInterval,
      keyGracePeriod: flags.keyGracePeriod,
      biscuitTtl: flags.biscuitTtl,
      memberSyncInterval: flags.memberSyncInterval,
    }
    const refused = KeyDurations.refusal(durations)
    if (refused !== undefined) return yield* new UsageError({ message: refused })
    const warned = KeyDurations.warning(durations)
    if (warned !== undefined) yield* Effect.logWarning(warned)
    const allowedAudiences = Flag.list(flags.allowedAudiences)
    if (allowedAudiences.length === 0) {
      return yield* new UsageError({ message: "--allowed-audiences: no audience given" })
    }
    if (Duration.toMillis(flags.requestTimeout) <= 0) {
      return yield* new UsageError({ message: "--request-timeout: must be more than 0" })
    }
    if (Duration.toMillis(flags.oidcKeysMaxAge) < 1000) {
      return yield* new UsageError({ message: "--oidc-keys-max-age: must be at least 1s" })
    }
    const logFormat = yield* Logging.formatFromConfig
    const settings: ControlPlaneSettings = {
      issuers,
      allowedAudiences,
      oidcClientId: Option.getOrElse(flags.oidcClientId, () => allowedAudiences[0] ?? ""),
      insecureSkipTlsVerify: flags.insecureSkipTlsVerify,
      oidcKeysMaxAge: flags.oidcKeysMaxAge,
      bindAddress: flags.bindAddress,
      database: yield* resolveDatabase(flags),
      adminToken: yield* Flag.readSecret(flags.adminTokenPath, "MESH_ADMIN_TOKEN"),
      autoApproveEnrollment: flags.autoApproveEnrollment,
      biscuitTtl: flags.biscuitTtl,
      oidcSessionTtl: flags.oidcSessionTtl,
      keyRotationInterval: flags.keyRotationInterval,
      keyGracePeriod: flags.keyGracePeriod,
      leaseDuration: flags.leaseDuration,
      nodeRetention: flags.nodeRetention,
      meshReconnectInterval: flags.meshReconnectInterval,
      logLevel: flags.logLevel,
      logFormat,
      enrollRateLimit: { perSecond: flags.enrollRateLimit, burst: Math.max(1, flags.enrollBurst) },
      maxBodyBytes: flags.maxBodyBytes,
      requestTimeout: flags.requestTimeout,
      shutdownGrace: SHUTDOWN_GRACE,
    }
    return settings
  })

export const serve = (flags: ServerFlags) =>
  Effect.gen(function* () {
    const settings = yield* settingsFromFlags(flags)
    yield* Effect.logInfo("starting control plane").pipe(
      Effect.annotateLogs({
        driver: settings.database.driver,
        issuer: settings.issuers[0],
        admin_api: Option.isSome(settings.adminToken) ? "enabled" : "disabled (no admin token)",
      }),
    )
    return yield* Layer.launch(ControlPlaneLive.layer(settings))
  }).pipe(
    Effect.provide(Layer.merge(Logging.layerFromConfig(flags.logLevel), Tracing.fromConfig("mesh-control-plane"))),
  )

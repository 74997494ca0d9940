/**
 * The control plane assembled from its capabilities. The database is migrated before any service that reads it is
 * built; the HTTP server starts last, so a request never meets a half-initialized process.
 */
import { Layer } from "effect"
import { ControlPlaneConfig, type ControlPlaneSettings } from "../config/ControlPlaneConfig.js"
import * as Server from "../http/Server.js"
import * as ConsoleSignInLive from "./console/ConsoleSignInLive.js"
import * as BootstrapTokensLive from "./enrollment/BootstrapTokensLive.js"
import * as EnrollmentLive from "./enrollment/EnrollmentLive.js"
import * as EnrollmentRequestsLive from "./enrollment/EnrollmentRequestsLive.js"
import * as OidcLive from "./enrollment/OidcLive.js"
import * as RegistrationLive from "./enrollment/RegistrationLive.js"
import * as UsersLive from "./enrollment/UsersLive.js"
import * as MeshEventsLibp2p from "./events/MeshEventsLibp2p.js"
import * as MeshEventsMemory from "./events/MeshEventsMemory.js"
import * as ChallengesLive from "./identity/ChallengesLive.js"
import * as CredentialRefreshLive from "./identity/CredentialRefreshLive.js"
import * as CredentialsLive from "./identity/CredentialsLive.js"
import * as KeyRingLive from "./identity/KeyRingLive.js"
import * as BanAnnouncer from "./nodes/BanAnnouncer.js"
import * as BansLive from "./nodes/BansLive.js"
import * as CatalogLive from "./nodes/CatalogLive.js"
import * as NodesLive from "./nodes/NodesLive.js"
import * as RetentionLive from "./nodes/RetentionLive.js"
import * as AuditLive from "./operations/AuditLive.js"
import * as ChangeFeedLive from "./operations/ChangeFeedLive.js"
import * as DatabaseHealthLive from "./operations/DatabaseHealthLive.js"
import * as MeshStateMetrics from "./operations/MeshStateMetrics.js"
import * as MetricsLive from "./operations/MetricsLive.js"
import * as RateLimiterLive from "./operations/RateLimiterLive.js"
import * as PolicyLive from "./policy/PolicyLive.js"
import * as InfoLive from "./routers/InfoLive.js"
import * as LeasesLive from "./routers/LeasesLive.js"
import * as Migrations from "./sql/Migrations.js"
import * as SqlLive from "./sql/SqlLive.js"
import * as ToolDriftReportsLive from "./tooldrift/ToolDriftReportsLive.js"

/** The SqlClient, migrated. */
export const database = (settings: ControlPlaneSettings) =>
  Migrations.layer.pipe(Layer.provideMerge(SqlLive.layer(settings.database)))

/**
 * Every capability of the control plane, without the HTTP server. Each tier sees the tiers below it; mesh events sit
 * between the leases they need (to find routers) and the bans and policy that announce through them.
 */
export interface Options {
  /**
   * Where mesh events go: the mesh (default), or only the in-memory record (tests of members that must do without
   * them, as when every event is lost).
   */
  readonly events?: "mesh" | "memory"
}

export const services = (settings: ControlPlaneSettings, options: Options = {}) =>
  Layer.mergeAll(InfoLive.layer, MeshStateMetrics.layer, BanAnnouncer.layer).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        CredentialRefreshLive.layer,
        EnrollmentLive.layer,
        RegistrationLive.layer,
        ToolDriftReportsLive.layer,
      ),
    ),
    Layer.provideMerge(Layer.mergeAll(BansLive.layer, PolicyLive.layer)),
    Layer.provideMerge(options.events === "memory" ? MeshEventsMemory.layer : MeshEventsLibp2p.layer),
    Layer.provideMerge(Layer.mergeAll(LeasesLive.layer, CatalogLive.layer)),
    Layer.provideMerge(
      Layer.mergeAll(
        CredentialsLive.layer,
        NodesLive.layer,
        UsersLive.layer,
        BootstrapTokensLive.layer,
        EnrollmentRequestsLive.layer,
        OidcLive.layer,
        ConsoleSignInLive.layer,
        RetentionLive.layer,
      ),
    ),
    Layer.provideMerge(
      Layer.mergeAll(
        KeyRingLive.layer,
        ChallengesLive.layer,
        ChangeFeedLive.layer,
        RateLimiterLive.layer,
        DatabaseHealthLive.layer,
        MetricsLive.layer,
        AuditLive.layer,
      ),
    ),
    Layer.provideMerge(database(settings)),
    Layer.provideMerge(Layer.succeed(ControlPlaneConfig, settings)),
  )

/**
 * The whole control plane, serving HTTP on the configured address. Whoever runs it provides tracing
 * (`observability/Tracing.ts`): off, spans are no-ops.
 */
export const layer = (settings: ControlPlaneSettings, options: Options = {}) =>
  Server.layer(settings.bindAddress, {
    requestTimeout: settings.requestTimeout,
    shutdownGrace: settings.shutdownGrace,
  }).pipe(Layer.provideMerge(services(settings, options)))

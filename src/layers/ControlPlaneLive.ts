/**
 * The control plane assembled from its capabilities. The database is migrated before any service that reads it is
 * built; the HTTP server starts last, so a request never meets a half-initialized process.
 */
import { Layer } from "effect"
import { ControlPlaneConfig, type ControlPlaneSettings } from "../config/ControlPlaneConfig.js"
import * as Server from "../http/Server.js"
import * as DatabaseHealthLive from "./DatabaseHealthLive.js"
import * as MetricsLive from "./metrics/MetricsLive.js"
import * as Migrations from "./sql/Migrations.js"
import * as SqlLive from "./sql/SqlLive.js"

/** The SqlClient, migrated. */
export const database = (settings: ControlPlaneSettings) =>
  Migrations.layer.pipe(Layer.provideMerge(SqlLive.layer(settings.database)))

/** Every capability of the control plane, without the HTTP server. */
export const services = (settings: ControlPlaneSettings) =>
  Layer.mergeAll(DatabaseHealthLive.layer, MetricsLive.layer).pipe(
    Layer.provideMerge(database(settings)),
    Layer.provideMerge(Layer.succeed(ControlPlaneConfig, settings)),
  )

/** The whole control plane, serving HTTP on the configured address. */
export const layer = (settings: ControlPlaneSettings) =>
  Server.layer(settings.bindAddress).pipe(Layer.provideMerge(services(settings)))

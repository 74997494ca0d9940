/**
 * The database as the admin commands see it: the same flags as the server, migrated, with the services a command
 * needs and nothing that listens or runs in the background.
 */
import { Layer } from "effect"
import type { DatabaseConfig } from "../../../config/DatabaseConfig.js"
import * as MeshEventsMemory from "../../../layers/events/MeshEventsMemory.js"
import * as BansLive from "../../../layers/nodes/BansLive.js"
import * as AuditLive from "../../../layers/operations/AuditLive.js"
import * as ChangeFeedLive from "../../../layers/operations/ChangeFeedLive.js"
import * as Migrations from "../../../layers/sql/Migrations.js"
import * as SqlLive from "../../../layers/sql/SqlLive.js"

export const bansLayer = (database: DatabaseConfig) =>
  BansLive.layer.pipe(
    Layer.provide(Layer.mergeAll(AuditLive.layer, MeshEventsMemory.layer, ChangeFeedLive.publisher)),
    Layer.provideMerge(Migrations.layer.pipe(Layer.provideMerge(SqlLive.layer(database)))),
  )

/**
 * Signed mesh events announce changes to running routers and nodes: bans (and unbans), key rotations and policy
 * updates. Publishing never fails the action that caused it: a peer that misses an event learns the state from
 * /info and /keys when it next syncs.
 */
import { Context, type Effect } from "effect"
import type * as MeshEventCodec from "../../domain/MeshEventCodec.js"

export type MeshEvent = MeshEventCodec.Event

export interface MeshEventsService {
  readonly publish: (event: MeshEvent) => Effect.Effect<void>
  /** The most recent events published by this replica, newest last (diagnostics and tests). */
  readonly recent: Effect.Effect<ReadonlyArray<MeshEvent>>
}

export class MeshEvents extends Context.Tag("mesh/MeshEvents")<MeshEvents, MeshEventsService>() {}

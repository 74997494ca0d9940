/**
 * Tells every replica that shared state other replicas cache (bans, leases) has changed. `version` moves forward on
 * every change seen, local or remote, so a cache remembers the version it was computed at and is stale as soon as
 * the number differs: no waiting on a fiber to deliver the news.
 */
import { Context, type Effect } from "effect"

export type Topic = "bans" | "leases"

export interface ChangeFeedService {
  /** Announces a committed change, here at once and to other replicas as fast as the database carries it. */
  readonly publish: (topic: Topic) => Effect.Effect<void>
  readonly version: Effect.Effect<number>
  /** Waits until the version differs from `since`; returns the new version. */
  readonly changedSince: (since: number) => Effect.Effect<number>
}

export class ChangeFeed extends Context.Tag("mesh/ChangeFeed")<ChangeFeed, ChangeFeedService>() {}

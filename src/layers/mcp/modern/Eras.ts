/**
 * The era of each peer's MCP service as this node found it (spec 2026-07-28, basic/versioning: the verdict is a
 * property of the server, cached per server). Unknown, a service gets a modern request first; modern, it gets only
 * those; legacy, a 2025-era session. A legacy verdict is asked again after LEGACY_RECHECK (the spec's warning: a stale
 * legacy verdict would work silently forever once the server is upgraded), a modern one when a request to it shows a
 * legacy answer. At most MAX verdicts, the oldest dropped first.
 */
import { Clock, Duration, Effect, Ref } from "effect"
import type { Era } from "../../../domain/McpEra.js"

export const MAX = 4096
export const LEGACY_RECHECK = Duration.minutes(10)

interface Verdict {
  readonly era: Era
  readonly atMs: number
}

export type Eras = Ref.Ref<ReadonlyMap<string, Verdict>>

export const make: Effect.Effect<Eras> = Ref.make<ReadonlyMap<string, Verdict>>(new Map())

/** The verdict for `key`, if one stands. */
export const get = (eras: Eras, key: string): Effect.Effect<Era | undefined> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(Ref.get(eras), (map) => {
      const found = map.get(key)
      if (found === undefined) return undefined
      if (found.era === "legacy" && now - found.atMs > Duration.toMillis(LEGACY_RECHECK)) return undefined
      return found.era
    }),
  )

/** Records the verdict for `key` (a re-insert, so the map's order is the order of the latest verdicts). */
export const set = (eras: Eras, key: string, era: Era): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Ref.update(eras, (map) => {
      const next = new Map(map)
      next.delete(key)
      next.set(key, { era, atMs: now })
      for (const oldest of next.keys()) {
        if (next.size <= MAX) break
        next.delete(oldest)
      }
      return next
    }),
  )

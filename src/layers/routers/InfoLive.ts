/**
 * Info from the configuration, the leases and the bans, served from memory. The cached answer is dropped when the
 * ChangeFeed reports a ban or lease change (on any replica), when the first listed lease expires, and in any case
 * after a few seconds (a safety net: the feed hears other processes' writes within a second).
 */
import { create, toBinary } from "@bufbuild/protobuf"
import { Clock, Effect, Layer, Option, Ref } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { ControlPlaneInfoResponseSchema } from "../../gen/mesh_pb.js"
import { Bans } from "../../services/nodes/Bans.js"
import { ChangeFeed } from "../../services/operations/ChangeFeed.js"
import { Info } from "../../services/routers/Info.js"
import { Leases } from "../../services/routers/Leases.js"

/** Longest a cached /info is served without a change being seen. */
export const MAX_AGE_MS = 2_000

interface Cached {
  readonly body: Uint8Array
  /** The change feed's version it was computed at. */
  readonly version: number
  readonly at: number
  readonly validUntil: number
}

export const layer = Layer.effect(
  Info,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const leases = yield* Leases
    const bans = yield* Bans
    const feed = yield* ChangeFeed
    const fixed = {
      oidcIssuer: config.issuers[0] ?? "",
      clientId: config.oidcClientId,
      audience: config.allowedAudiences[0] ?? "",
    }
    const cached = yield* Ref.make<Cached | undefined>(undefined)

    const compute = (version: number, now: number) =>
      Effect.flatMap(Effect.all([leases.live, bans.bannedPeerIds], { concurrency: 2 }), ([live, banned]) => {
        const body = toBinary(
          ControlPlaneInfoResponseSchema,
          create(ControlPlaneInfoResponseSchema, {
            ...fixed,
            routerAddresses: live.flatMap((l) => l.addresses),
            bannedPeerIds: [...banned],
          }),
        )
        const validUntil = Math.min(now + MAX_AGE_MS, ...live.map((l) => l.expiresAt))
        return Effect.as(Ref.set(cached, { body, version, at: now, validUntil }), body)
      })

    /** The cached answer with the version and time it was checked at; no I/O. */
    const lookup = Effect.gen(function* () {
      const version = yield* feed.version
      const now = yield* Clock.currentTimeMillis
      const hit = yield* Ref.get(cached)
      const fresh = hit !== undefined && hit.version === version && now >= hit.at && now < hit.validUntil
      return { body: fresh ? hit.body : undefined, version, now }
    })

    return {
      body: Effect.flatMap(lookup, ({ body, version, now }) =>
        body === undefined ? compute(version, now) : Effect.succeed(body),
      ),
      cached: Effect.map(lookup, ({ body }) => Option.fromNullable(body)),
    }
  }),
)

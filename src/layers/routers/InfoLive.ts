/** Info from the configuration, the leases and the bans. */
import { create, toBinary } from "@bufbuild/protobuf"
import { Effect, Layer } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { ControlPlaneInfoResponseSchema } from "../../gen/mesh_pb.js"
import { Bans } from "../../services/nodes/Bans.js"
import { Info } from "../../services/routers/Info.js"
import { Leases } from "../../services/routers/Leases.js"

export const layer = Layer.effect(
  Info,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const leases = yield* Leases
    const bans = yield* Bans
    const fixed = {
      oidcIssuer: config.issuers[0] ?? "",
      clientId: config.oidcClientId,
      audience: config.allowedAudiences[0] ?? "",
    }
    return {
      body: Effect.map(Effect.all([leases.live, bans.bannedPeerIds], { concurrency: 2 }), ([live, banned]) =>
        toBinary(
          ControlPlaneInfoResponseSchema,
          create(ControlPlaneInfoResponseSchema, {
            ...fixed,
            routerAddresses: live.flatMap((l) => l.addresses),
            bannedPeerIds: [...banned],
          }),
        ),
      ),
    }
  }),
)

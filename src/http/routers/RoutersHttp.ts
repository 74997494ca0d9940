/** POST /routers/lease: RouterLeaseRequest in (credential as bearer, or in the body), RouterLeaseResponse out. */
import { create } from "@bufbuild/protobuf"
import { timestampFromMs } from "@bufbuild/protobuf/wkt"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { RouterLeaseRequestSchema, RouterLeaseResponseSchema } from "../../gen/mesh_pb.js"
import { Leases } from "../../services/routers/Leases.js"
import { ControlPlaneApi } from "../Api.js"
import * as Bearer from "../Bearer.js"
import * as Protobuf from "../Protobuf.js"

export const RoutersHttpLive = HttpApiBuilder.group(ControlPlaneApi, "routers", (handlers) =>
  Effect.gen(function* () {
    const leases = yield* Leases
    return handlers.handle("lease", ({ payload }) =>
      Effect.gen(function* () {
        const body = yield* Protobuf.decode(RouterLeaseRequestSchema, payload)
        const credential = body.biscuit.length > 0 ? body.biscuit : yield* Bearer.credential
        const lease = yield* leases.renew({
          credential,
          peerId: body.peerId,
          addresses: body.addresses,
          connectedPeers: body.connectedPeers,
          dhtSize: body.dhtSize,
          challengeUnixMs: body.challengeUnixMs,
          challengeSignature: body.challengeSignature,
        })
        return Protobuf.respond(
          RouterLeaseResponseSchema,
          create(RouterLeaseResponseSchema, { success: true, expireTime: timestampFromMs(lease.expiresAt) }),
        )
      }),
    )
  }),
)

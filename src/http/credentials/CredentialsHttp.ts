/** POST /refresh: TokenRefreshRequest in, TokenRefreshResponse out, the current credential as bearer. */
import { create } from "@bufbuild/protobuf"
import { timestampFromMs } from "@bufbuild/protobuf/wkt"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TokenRefreshRequestSchema, TokenRefreshResponseSchema } from "../../gen/mesh_pb.js"
import { CredentialRefresh } from "../../services/identity/CredentialRefresh.js"
import { ControlPlaneApi } from "../Api.js"
import * as Bearer from "../Bearer.js"
import * as Protobuf from "../Protobuf.js"

export const CredentialsHttpLive = HttpApiBuilder.group(ControlPlaneApi, "credentials", (handlers) =>
  Effect.gen(function* () {
    const refresh = yield* CredentialRefresh
    return handlers.handle("refresh", ({ payload }) =>
      Effect.gen(function* () {
        const presented = yield* Bearer.credential
        const body = yield* Protobuf.decode(TokenRefreshRequestSchema, payload)
        const minted = yield* refresh.refresh({
          presented,
          peerId: body.peerId,
          challengeUnixMs: body.challengeUnixMs,
          challengeSignature: body.challengeSignature,
        })
        return Protobuf.respond(
          TokenRefreshResponseSchema,
          create(TokenRefreshResponseSchema, {
            biscuitToken: minted.bytes,
            expireTime: timestampFromMs(minted.expiresAtMs),
          }),
          { noStore: true },
        )
      }),
    )
  }),
)

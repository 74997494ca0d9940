/** The per-user API (an ID token from a configured issuer): a user's own nodes and bootstrap tokens. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { BadRequest, Forbidden, NotFound } from "../../domain/Errors.js"
import { UserAuth } from "../auth/UserAuth.js"
import { MintTokenBody } from "../TokenRequest.js"
import { BootstrapTokenView, MintedTokenView, NodeView } from "../Views.js"

export const UserStatus = Schema.Struct({
  user: Schema.Struct({
    id: Schema.String,
    issuer: Schema.String,
    subject: Schema.String,
    email: Schema.NullOr(Schema.String),
    admin: Schema.Boolean,
  }),
  nodes: Schema.Array(NodeView),
  bootstrap_tokens: Schema.Array(BootstrapTokenView),
})

export class UserApi extends HttpApiGroup.make("user")
  .add(HttpApiEndpoint.get("status", "/user/status").addSuccess(UserStatus))
  .add(
    HttpApiEndpoint.post("mintToken", "/user/bootstrap-tokens")
      .setPayload(MintTokenBody)
      .addSuccess(MintedTokenView, { status: 201 })
      .addError(BadRequest)
      .addError(Forbidden),
  )
  .add(
    HttpApiEndpoint.post("revoke", "/user/revoke")
      .setPayload(Schema.Struct({ peer_id: Schema.String }))
      .addSuccess(Schema.Struct({ peer_id: Schema.String, banned: Schema.Boolean }))
      .addError(NotFound)
      .addError(Forbidden),
  )
  .middleware(UserAuth) {}

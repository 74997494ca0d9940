/** The operator's node actions (admin token): ban, unban, autonomous recovery. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import { NotFound } from "../../domain/Errors.js"
import { AdminAuth } from "../auth/AdminAuth.js"

const peerId = HttpApiSchema.param("peer_id", Schema.String)

export const BanView = Schema.Struct({
  peer_id: Schema.String,
  banned: Schema.Boolean,
  /** Whether an OIDC identity was banned or unbanned with the node. */
  identity: Schema.NullOr(Schema.String),
  changed: Schema.Boolean,
})

export class AdminNodesApi extends HttpApiGroup.make("adminNodes")
  .add(
    HttpApiEndpoint.post("revoke", "/admin/revoke")
      .setPayload(Schema.Struct({ peer_id: Schema.String }))
      .addSuccess(BanView)
      .addError(NotFound),
  )
  .add(HttpApiEndpoint.post("unban")`/admin/nodes/${peerId}/unban`.addSuccess(BanView).addError(NotFound))
  .add(
    HttpApiEndpoint.post("autonomousRecovery")`/admin/nodes/${peerId}/autonomous-recovery`
      .setPayload(Schema.Struct({ enabled: Schema.Boolean }))
      .addSuccess(Schema.Struct({ peer_id: Schema.String, autonomous_recovery: Schema.Boolean }))
      .addError(NotFound),
  )
  .middleware(AdminAuth) {}

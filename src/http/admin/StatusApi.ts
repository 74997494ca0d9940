/** The operator's overview (`/admin/status`) and the audit log (`/admin/audit`). */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { ACTIONS } from "../../services/operations/Audit.js"
import { AdminAuth } from "../auth/AdminAuth.js"
import { BootstrapTokenView, EnrollmentRequestView, NodeView } from "../Views.js"

/** Lists in the status are capped; `counts` always gives the totals. */
export const STATUS_LIST_LIMIT = 1000

export const RouterView = Schema.Struct({
  peer_id: Schema.String,
  addresses: Schema.Array(Schema.String),
  connected_peers: Schema.Number,
  dht_size: Schema.Number,
  renewed_at: Schema.String,
  expires_at: Schema.String,
})

export const StatusView = Schema.Struct({
  counts: Schema.Struct({
    nodes: Schema.Number,
    routers: Schema.Number,
    pending_enrollments: Schema.Number,
    bootstrap_tokens: Schema.Number,
    users: Schema.Number,
  }),
  routers: Schema.Array(RouterView),
  nodes: Schema.Array(NodeView),
  enrollment_requests: Schema.Array(EnrollmentRequestView),
  bootstrap_tokens: Schema.Array(BootstrapTokenView),
  users: Schema.Array(
    Schema.Struct({
      id: Schema.String,
      email: Schema.NullOr(Schema.String),
      first_seen_at: Schema.String,
      last_seen_at: Schema.String,
    }),
  ),
  policy: Schema.Struct({ version: Schema.Number, updated_at: Schema.NullOr(Schema.String), document: Schema.Unknown }),
  catalog: Schema.Array(
    Schema.Struct({
      peer_id: Schema.String,
      reported_at: Schema.String,
      services: Schema.Array(Schema.Struct({ type: Schema.String, name: Schema.String, description: Schema.String })),
    }),
  ),
  signing_keys: Schema.Array(
    Schema.Struct({ id: Schema.Number, created_at: Schema.String, retires_at: Schema.NullOr(Schema.String) }),
  ),
})

export const AuditView = Schema.Struct({
  entries: Schema.Array(
    Schema.Struct({
      id: Schema.Number,
      at: Schema.String,
      actor: Schema.String,
      action: Schema.String,
      subject: Schema.String,
      details: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
    }),
  ),
  next: Schema.NullOr(Schema.Number),
})

export class AdminStatusApi extends HttpApiGroup.make("adminStatus")
  .add(HttpApiEndpoint.get("status", "/admin/status").addSuccess(StatusView))
  .add(
    HttpApiEndpoint.get("audit", "/admin/audit")
      .setUrlParams(
        Schema.Struct({
          before: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.positive())),
          limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500))),
          /** Only the entries of this actor (`operator`, `cli`, `auto-approve`, `user:<issuer>|<subject>`). */
          actor: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1024))),
          action: Schema.optional(Schema.Literal(...ACTIONS)),
        }),
      )
      .addSuccess(AuditView),
  )
  .middleware(AdminAuth) {}

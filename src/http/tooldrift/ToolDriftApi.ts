/**
 * Tool drift: nodes report a changed tool definition (protobuf, signed as the catalog report is, body included); the
 * operator lists the reports and approves (a pin in the policy) or dismisses each. Banning the provider is
 * `POST /admin/revoke`.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, Unauthorized } from "../../domain/Errors.js"
import { AdminAuth } from "../auth/AdminAuth.js"
import * as Protobuf from "../Protobuf.js"

const Labels = Schema.Record({ key: Schema.String, value: Schema.String })

export const ToolDriftView = Schema.Struct({
  id: Schema.String,
  reporter_peer_id: Schema.String,
  provider_peer_id: Schema.String,
  provider_labels: Labels,
  tool: Schema.String,
  against: Schema.Literal("policy", "first_use"),
  old_fingerprint: Schema.String,
  /** Canonical JSON as the provider sent it; null when the reporting node held none, or it was over 64 KiB. */
  old_definition: Schema.NullOr(Schema.String),
  new_fingerprint: Schema.String,
  new_definition: Schema.NullOr(Schema.String),
  status: Schema.Literal("open", "approved", "dismissed"),
  reports: Schema.Number,
  first_reported_at: Schema.String,
  last_reported_at: Schema.String,
  resolved_at: Schema.NullOr(Schema.String),
  resolved_by: Schema.NullOr(Schema.String),
  /** The labels an approval limited the pin to; empty for every provider, null unless approved. */
  approved_for: Schema.NullOr(Labels),
})

export class ToolDriftApi extends HttpApiGroup.make("toolDrift").add(
  HttpApiEndpoint.post("report", "/nodes/tool-drift")
    .setPayload(Protobuf.Body)
    .addSuccess(HttpApiSchema.NoContent)
    .addError(BadRequest)
    .addError(Unauthorized)
    .addError(Forbidden)
    .addError(Conflict)
    .addError(PayloadTooLarge),
) {}

const id = HttpApiSchema.param("id", Schema.String)

export class AdminToolDriftApi extends HttpApiGroup.make("adminToolDrift")
  .add(
    HttpApiEndpoint.get("list", "/admin/tool-drift")
      .setUrlParams(Schema.Struct({ status: Schema.optional(Schema.Literal("open", "approved", "dismissed", "all")) }))
      .addSuccess(Schema.Array(ToolDriftView)),
  )
  .add(
    HttpApiEndpoint.post("approve")`/admin/tool-drift/${id}/approve`
      .setPayload(
        Schema.Struct({
          /** Pin only for providers attesting the provider's labels (as its node record holds them). */
          for_provider_labels: Schema.optional(Schema.Boolean),
        }),
      )
      .addSuccess(Schema.Struct({ report: ToolDriftView, policy_version: Schema.Number }))
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest),
  )
  .add(
    HttpApiEndpoint.post("dismiss")`/admin/tool-drift/${id}/dismiss`
      .addSuccess(ToolDriftView)
      .addError(NotFound)
      .addError(Conflict),
  )
  .middleware(AdminAuth) {}

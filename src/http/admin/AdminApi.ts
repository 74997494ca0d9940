/** The operator API (admin token): bootstrap tokens and the enrollment queue. JSON throughout. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import { BadRequest, Conflict, Forbidden, Gone, NotFound } from "../../domain/Errors.js"
import { AdminAuth } from "../auth/AdminAuth.js"
import { MintTokenBody } from "../TokenRequest.js"
import { BootstrapTokenView, EnrollmentRequestView, MintedTokenView } from "../Views.js"

const id = HttpApiSchema.param("id", Schema.String)

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("mintToken", "/admin/bootstrap-tokens")
      .setPayload(MintTokenBody)
      .addSuccess(MintedTokenView, { status: 201 })
      .addError(BadRequest),
  )
  .add(HttpApiEndpoint.get("listTokens", "/admin/bootstrap-tokens").addSuccess(Schema.Array(BootstrapTokenView)))
  .add(
    HttpApiEndpoint.del("revokeToken")`/admin/bootstrap-tokens/${id}`.addSuccess(BootstrapTokenView).addError(NotFound),
  )
  .add(
    HttpApiEndpoint.get("listEnrollments", "/admin/enrollments")
      .setUrlParams(
        Schema.Struct({ status: Schema.optional(Schema.Literal("pending", "approved", "rejected", "all")) }),
      )
      .addSuccess(Schema.Array(EnrollmentRequestView)),
  )
  .add(
    HttpApiEndpoint.post("approve")`/admin/enrollments/${id}/approve`
      .addSuccess(EnrollmentRequestView)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Gone)
      .addError(Forbidden),
  )
  .add(
    HttpApiEndpoint.post("reject")`/admin/enrollments/${id}/reject`
      .addSuccess(EnrollmentRequestView)
      .addError(NotFound)
      .addError(Conflict),
  )
  .middleware(AdminAuth) {}

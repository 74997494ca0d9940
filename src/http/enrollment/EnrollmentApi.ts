/** Enrollment of machines: OIDC (`/register`), bootstrap tokens (`/enroll`) and polling a queued request. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { BadRequest, Conflict, Forbidden, Gone, Unauthorized, Unavailable } from "../../domain/Errors.js"
import * as Protobuf from "../Protobuf.js"

export class EnrollmentApi extends HttpApiGroup.make("enrollment")
  .add(
    HttpApiEndpoint.post("register", "/register")
      .setPayload(Protobuf.Body)
      .addSuccess(Protobuf.Body)
      .addError(BadRequest)
      .addError(Unauthorized)
      .addError(Forbidden)
      .addError(Conflict)
      .addError(Unavailable),
  )
  .add(
    HttpApiEndpoint.post("enroll", "/enroll")
      .setPayload(Protobuf.Body)
      .addSuccess(Protobuf.Body)
      .addError(BadRequest)
      .addError(Unauthorized)
      .addError(Forbidden)
      .addError(Conflict)
      .addError(Gone),
  )
  .add(
    HttpApiEndpoint.get("status", "/enroll/status")
      .setUrlParams(Schema.Struct({ peer_id: Schema.optional(Schema.String) }))
      .addSuccess(Protobuf.Body)
      .addError(Unauthorized)
      .addError(Forbidden)
      .addError(Conflict),
  ) {}

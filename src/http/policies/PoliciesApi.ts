/**
 * The mesh policy: read by mesh components (their credential) and operators (the admin token); replaced as a whole
 * by operators, as protobuf or protojson. Bodies are read raw because either encoding is accepted.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"
import { AdminAuth } from "../auth/AdminAuth.js"
import * as Protobuf from "../Protobuf.js"
import { describeUpdateBody } from "./PolicyJson.js"

export class PoliciesApi extends HttpApiGroup.make("policies")
  .add(HttpApiEndpoint.get("get", "/policies").addSuccess(Protobuf.Body).addError(Unauthorized).addError(Forbidden))
  .add(
    HttpApiEndpoint.post("post", "/policies")
      .addSuccess(Protobuf.Body)
      .addError(BadRequest)
      .middleware(AdminAuth)
      .annotate(OpenApi.Transform, describeUpdateBody),
  )
  .add(
    HttpApiEndpoint.put("put", "/policies")
      .addSuccess(Protobuf.Body)
      .addError(BadRequest)
      .middleware(AdminAuth)
      .annotate(OpenApi.Transform, describeUpdateBody),
  ) {}

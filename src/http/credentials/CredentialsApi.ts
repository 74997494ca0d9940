/** Credential refresh for enrolled nodes and routers. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"
import * as Protobuf from "../Protobuf.js"

export class CredentialsApi extends HttpApiGroup.make("credentials").add(
  HttpApiEndpoint.post("refresh", "/refresh")
    .setPayload(Protobuf.Body)
    .addSuccess(Protobuf.Body)
    .addError(BadRequest)
    .addError(Unauthorized)
    .addError(Forbidden),
) {}

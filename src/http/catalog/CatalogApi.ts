/** A node's report of the services it publishes (display only). */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"
import * as Protobuf from "../Protobuf.js"

export class CatalogApi extends HttpApiGroup.make("catalog").add(
  HttpApiEndpoint.post("report", "/nodes/catalog")
    .setPayload(Protobuf.Body)
    .addSuccess(HttpApiSchema.NoContent)
    .addError(BadRequest)
    .addError(Unauthorized)
    .addError(Forbidden),
) {}

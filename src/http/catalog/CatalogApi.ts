/** A node's report of the services it publishes (display only). */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
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

/** Router leases: a router renews its lease with its addresses and telemetry. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"
import * as Protobuf from "../Protobuf.js"

export class RoutersApi extends HttpApiGroup.make("routers").add(
  HttpApiEndpoint.post("lease", "/routers/lease")
    .setPayload(Protobuf.Body)
    .addSuccess(Protobuf.Body)
    .addError(BadRequest)
    .addError(Unauthorized)
    .addError(Forbidden),
) {}

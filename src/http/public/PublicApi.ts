/** Routes anyone may call: liveness, readiness, metrics, the signing key set and the mesh information. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import { Unavailable } from "../../domain/Errors.js"
import * as Protobuf from "../Protobuf.js"

export const HealthStatus = Schema.Struct({ status: Schema.Literal("ok", "ready") })

/** Each issuer's key set (`services/enrollment/Oidc.ts`): stale keys still verify tokens, so it is still ready. */
export const IssuerKeysView = Schema.Struct({
  issuer: Schema.String,
  keys: Schema.Literal("unread", "fresh", "stale", "expired"),
  read_at: Schema.NullOr(Schema.String),
  problem: Schema.NullOr(Schema.String),
})

export const ReadyStatus = Schema.Struct({
  status: Schema.Literal("ready"),
  issuer_keys: Schema.Array(IssuerKeysView),
})

export class PublicApi extends HttpApiGroup.make("public")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(HealthStatus))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(ReadyStatus).addError(Unavailable))
  .add(HttpApiEndpoint.get("keys", "/keys").addSuccess(Protobuf.Body))
  .add(HttpApiEndpoint.get("info", "/info").addSuccess(Protobuf.Body))
  .add(
    HttpApiEndpoint.get("metrics", "/metrics").addSuccess(
      HttpApiSchema.Text({ contentType: "text/plain; version=0.0.4; charset=utf-8" }),
    ),
  ) {}

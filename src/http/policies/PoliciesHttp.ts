/** Handlers of the policies group. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Either, Option } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import * as Biscuit from "../../crypto/Biscuit.js"
import { BadRequest, Unauthorized } from "../../domain/Errors.js"
import { Credentials } from "../../services/identity/Credentials.js"
import { makeAdmittedCaller } from "../../services/nodes/AdmittedCaller.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { OPERATOR } from "../../services/operations/Audit.js"
import { Policy } from "../../services/policy/Policy.js"
import { ControlPlaneApi } from "../Api.js"
import { makeCheck } from "../auth/AdminAuth.js"
import * as Bearer from "../Bearer.js"
import * as PolicyCodec from "./PolicyCodec.js"

export const PoliciesHttpLive = HttpApiBuilder.group(ControlPlaneApi, "policies", (handlers) =>
  Effect.gen(function* () {
    const policy = yield* Policy
    const admittedCaller = makeAdmittedCaller(yield* Credentials, yield* Nodes)
    const config = yield* ControlPlaneConfig
    const isAdminToken = makeCheck(config.adminToken)
    const unauthorized = new Unauthorized({
      message: "a credential or the admin token is required as Authorization: Bearer",
    })

    /** The admin token, or the credential of an admitted node. */
    const authorizeRead = Effect.gen(function* () {
      const token = yield* Bearer.token
      if (Option.isNone(token)) return yield* unauthorized
      if (isAdminToken(token.value)) return
      const bytes = yield* Either.match(Biscuit.fromText(token.value), {
        onLeft: () => Effect.fail(unauthorized),
        onRight: Effect.succeed,
      })
      yield* admittedCaller(bytes)
    })

    const replace = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const json = PolicyCodec.isJson(request.headers["content-type"])
      const body = yield* request.arrayBuffer.pipe(
        Effect.mapError(() => new BadRequest({ message: "malformed request body" })),
      )
      const message = yield* PolicyCodec.decodeUpdate(new Uint8Array(body), json)
      yield* policy.replace(PolicyCodec.toDocument(message), OPERATOR)
      return PolicyCodec.updateResponse(json)
    })

    return handlers
      .handle("get", () =>
        Effect.gen(function* () {
          yield* authorizeRead
          const request = yield* HttpServerRequest.HttpServerRequest
          return PolicyCodec.getResponse(
            yield* policy.current,
            config.issuers,
            PolicyCodec.isJson(request.headers.accept),
          )
        }),
      )
      .handle("post", () => replace)
      .handle("put", () => replace)
  }),
)

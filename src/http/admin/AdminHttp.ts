/** Handlers of the operator API. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Clock, Effect } from "effect"
import { isSafeTerm } from "../../crypto/Biscuit.js"
import type * as Token from "../../domain/BootstrapToken.js"
import { BadRequest } from "../../domain/Errors.js"
import { BootstrapTokens } from "../../services/enrollment/BootstrapTokens.js"
import { Enrollment } from "../../services/enrollment/Enrollment.js"
import { EnrollmentRequests } from "../../services/enrollment/EnrollmentRequests.js"
import { Bans } from "../../services/nodes/Bans.js"
import { OPERATOR } from "../../services/operations/Audit.js"
import { ControlPlaneApi } from "../Api.js"
import * as Views from "../Views.js"

/** Shared by the operator and user APIs: a token view with its owner's ban state. */
export const tokenView = (bans: Bans["Type"], token: Token.BootstrapToken) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const ownerBanned = token.ownerId !== undefined && (yield* bans.isIdentityBanned(token.ownerId))
    return Views.bootstrapToken(token, now, ownerBanned)
  })

export const checkRole = (role: string) =>
  isSafeTerm(role) ? Effect.void : Effect.fail(new BadRequest({ message: "role holds a forbidden character" }))

export const AdminHttpLive = HttpApiBuilder.group(ControlPlaneApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const tokens = yield* BootstrapTokens
    const enrollment = yield* Enrollment
    const requests = yield* EnrollmentRequests
    const bans = yield* Bans

    return handlers
      .handle("mintToken", ({ payload }) =>
        Effect.gen(function* () {
          if (payload.role === undefined) return yield* new BadRequest({ message: "role is required" })
          yield* checkRole(payload.role)
          const { token, secret } = yield* tokens.mint({
            role: payload.role,
            ttlHours: payload.ttl_hours,
            maxUsages: payload.max_usages,
            description: payload.description,
            autonomousRecovery: payload.autonomous_recovery,
            ownerId: undefined,
            actor: OPERATOR,
          })
          return { ...(yield* tokenView(bans, token)), token: secret, ttl_hours: payload.ttl_hours }
        }),
      )
      .handle("listTokens", () =>
        Effect.flatMap(
          tokens.list(),
          Effect.forEach((t) => tokenView(bans, t)),
        ),
      )
      .handle("revokeToken", ({ path }) => Effect.flatMap(tokens.revoke(path.id, OPERATOR), (t) => tokenView(bans, t)))
      .handle("listEnrollments", ({ urlParams }) =>
        Effect.map(requests.list(urlParams.status === "all" ? undefined : (urlParams.status ?? "pending")), (list) =>
          list.map(Views.enrollmentRequest),
        ),
      )
      .handle("approve", ({ path }) => Effect.map(enrollment.approve(path.id, OPERATOR), Views.enrollmentRequest))
      .handle("reject", ({ path }) => Effect.map(enrollment.reject(path.id, OPERATOR), Views.enrollmentRequest))
  }),
)

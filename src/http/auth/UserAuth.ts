/**
 * An ID token from a configured issuer on /user/*: the caller is that identity. A banned identity is refused, and a
 * user bound to `mesh:role:admin` by policy may do what only operators may otherwise do.
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { Forbidden, Unauthorized, Unavailable } from "../../domain/Errors.js"
import { type Identity, identityKey } from "../../domain/Node.js"
import * as PolicyRules from "../../domain/Policy.js"
import { Oidc } from "../../services/enrollment/Oidc.js"
import { type User, Users } from "../../services/enrollment/Users.js"
import { Bans } from "../../services/nodes/Bans.js"
import { Policy } from "../../services/policy/Policy.js"

export interface Caller {
  readonly identity: Identity
  readonly user: User
  /** Every role the policy binds to the caller. */
  readonly roles: ReadonlySet<string>
  readonly isAdmin: boolean
}

export class CurrentUser extends Context.Tag("mesh/CurrentUser")<CurrentUser, Caller>() {}

export class UserAuth extends HttpApiMiddleware.Tag<UserAuth>()("mesh/UserAuth", {
  provides: CurrentUser,
  failure: Schema.Union(Unauthorized, Forbidden, Unavailable),
  security: { bearer: HttpApiSecurity.bearer },
}) {}

export const UserAuthLive = Layer.effect(
  UserAuth,
  Effect.gen(function* () {
    const oidc = yield* Oidc
    const bans = yield* Bans
    const users = yield* Users
    const policy = yield* Policy
    const config = yield* ControlPlaneConfig
    return {
      bearer: (token) =>
        Effect.gen(function* () {
          const idToken = Redacted.value(token)
          if (idToken.length === 0)
            return yield* new Unauthorized({ message: "an ID token is required as Authorization: Bearer" })
          const { identity } = yield* oidc.verify(idToken)
          if (yield* bans.isIdentityBanned(identityKey(identity))) {
            return yield* new Forbidden({ message: "identity is banned" })
          }
          const user = yield* users.seen(identity)
          const { document } = yield* policy.current
          const roles = PolicyRules.rolesOf(document, identity, config.issuers)
          return { identity, user, roles, isAdmin: roles.has(PolicyRules.ADMIN_ROLE) }
        }),
    }
  }),
)

/** Handlers of the user API: everything is scoped to the caller's identity. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Clock, Effect, Option } from "effect"
import * as Token from "../../domain/BootstrapToken.js"
import { BadRequest, Forbidden, NotFound } from "../../domain/Errors.js"
import { NODE_ROLE } from "../../domain/Policy.js"
import { BootstrapTokens } from "../../services/enrollment/BootstrapTokens.js"
import { Bans } from "../../services/nodes/Bans.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { userActor } from "../../services/operations/Audit.js"
import { ControlPlaneApi } from "../Api.js"
import { checkRole, tokenView } from "../admin/AdminHttp.js"
import { CurrentUser } from "../auth/UserAuth.js"
import * as Views from "../Views.js"

export const UserHttpLive = HttpApiBuilder.group(ControlPlaneApi, "user", (handlers) =>
  Effect.gen(function* () {
    const tokens = yield* BootstrapTokens
    const nodes = yield* Nodes
    const bans = yield* Bans

    return handlers
      .handle("status", () =>
        Effect.gen(function* () {
          const { user, isAdmin } = yield* CurrentUser
          const now = yield* Clock.currentTimeMillis
          const own = yield* nodes.list({ ownerId: user.id })
          const mine = yield* tokens.list({ ownerId: user.id })
          return {
            user: {
              id: user.id,
              issuer: user.issuer,
              subject: user.subject,
              email: user.email ?? null,
              admin: isAdmin,
            },
            nodes: own.map((n) => Views.node(n, now)),
            bootstrap_tokens: yield* Effect.forEach(mine, (t) => tokenView(bans, t)),
          }
        }),
      )
      .handle("mintToken", ({ payload }) =>
        Effect.gen(function* () {
          const { user, roles, isAdmin } = yield* CurrentUser
          const role = payload.role ?? NODE_ROLE
          yield* checkRole(role)
          // A new control plane grants nothing: only a binding for the role (or admin) lets a user mint for it.
          if (!isAdmin && !roles.has(role)) {
            return yield* new Forbidden({ message: `role "${role}" is not bound to this identity` })
          }
          if (!isAdmin) {
            if (role !== NODE_ROLE) return yield* new Forbidden({ message: `only ${NODE_ROLE} tokens may be minted` })
            if (payload.autonomous_recovery) {
              return yield* new Forbidden({ message: "autonomous recovery needs an admin" })
            }
            if (payload.ttl_hours > Token.USER_MAX_TTL_HOURS || payload.max_usages > Token.USER_MAX_USAGES) {
              return yield* new BadRequest({
                message: `ttl_hours may be at most ${Token.USER_MAX_TTL_HOURS} and max_usages at most ${Token.USER_MAX_USAGES}`,
              })
            }
          }
          const { token, secret } = yield* tokens.mint({
            role,
            ttlHours: payload.ttl_hours,
            maxUsages: payload.max_usages,
            description: payload.description,
            autonomousRecovery: payload.autonomous_recovery,
            ownerId: user.id,
            actor: userActor(user.id),
          })
          return { ...(yield* tokenView(bans, token)), token: secret, ttl_hours: payload.ttl_hours }
        }),
      )
      .handle("revoke", ({ payload }) =>
        Effect.gen(function* () {
          const { user } = yield* CurrentUser
          const node = yield* nodes.find(payload.peer_id)
          if (Option.isNone(node)) return yield* new NotFound({ message: "no such node" })
          if (node.value.ownerId !== user.id) return yield* new Forbidden({ message: "you do not own this node" })
          yield* bans.ban(node.value.peerId, userActor(user.id))
          return { peer_id: node.value.peerId, banned: true }
        }),
      )
  }),
)

/** Registration over Oidc, Policy, Bans, Nodes and Credentials. */
import { Clock, Duration, Effect, Layer, Option } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { BadRequest, Forbidden } from "../../domain/Errors.js"
import * as Labels from "../../domain/Labels.js"
import { identityKey, type Node } from "../../domain/Node.js"
import * as PeerKey from "../../domain/PeerKey.js"
import * as PolicyRules from "../../domain/Policy.js"
import { Oidc } from "../../services/enrollment/Oidc.js"
import { type RegisterRequest, Registration } from "../../services/enrollment/Registration.js"
import { Users } from "../../services/enrollment/Users.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { Credentials } from "../../services/identity/Credentials.js"
import { Bans } from "../../services/nodes/Bans.js"
import { lostWrite, Nodes } from "../../services/nodes/Nodes.js"
import { Policy } from "../../services/policy/Policy.js"

const badRequest = (message: string) => new BadRequest({ message })
const forbidden = (message: string) => new Forbidden({ message })

/** The roles a registered identity holds: the requested one and any non-system role bound to it. */
export const finalRoles = (bound: ReadonlySet<string>, requested: string): ReadonlyArray<string> => [
  requested,
  ...[...bound].filter((r) => r !== requested && !r.startsWith("mesh:role:")),
]

export const layer = Layer.effect(
  Registration,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const oidc = yield* Oidc
    const policy = yield* Policy
    const bans = yield* Bans
    const users = yield* Users
    const nodes = yield* Nodes
    const credentials = yield* Credentials
    const challenges = yield* Challenges
    const sessionTtl = Duration.toMillis(config.oidcSessionTtl)

    const register = Effect.fn("Registration.register")(function* (input: RegisterRequest) {
      const key = yield* Effect.mapError(PeerKey.bind(input.peerId, input.publicKey), badRequest)
      if (input.requestedRole.length === 0) return yield* badRequest("requested_role must be specified")
      yield* Effect.mapError(Labels.validate(input.labels), badRequest)
      const token = yield* oidc.verify(input.idToken)
      const identity = token.identity
      if (yield* bans.isIdentityBanned(identityKey(identity))) return yield* forbidden("identity is banned")
      yield* challenges.verifyOnce({
        endpoint: "register",
        peerId: key.peerId,
        publicKey: key.publicKey,
        unixMs: input.challengeUnixMs,
        signature: input.challengeSignature,
      })
      yield* users.seen(identity)
      const existing = yield* nodes.find(key.peerId)
      if (Option.isSome(existing)) {
        if (existing.value.banned) return yield* forbidden("node is banned")
        const owner = existing.value.identity
        if (owner === undefined || identityKey(owner) !== identityKey(identity)) {
          return yield* forbidden("peer is enrolled to another identity")
        }
      }
      const { document } = yield* policy.current
      const bound = PolicyRules.rolesOf(document, { peerId: key.peerId, ...identity }, config.issuers)
      if (!bound.has(input.requestedRole)) {
        return yield* forbidden(`role "${input.requestedRole}" is not bound to this identity`)
      }
      yield* Effect.mapError(
        PolicyRules.checkLabels(document, finalRoles(bound, input.requestedRole), input.labels),
        forbidden,
      )

      const now = yield* Clock.currentTimeMillis
      const sessionEnd = now + sessionTtl
      const minted = yield* credentials.mint({
        peerId: key.peerId,
        role: input.requestedRole,
        labels: input.labels,
        identity,
        notAfterMs: Math.min(token.expiresAtMs, sessionEnd),
      })
      const record: Node = {
        peerId: key.peerId,
        publicKey: key.publicKey,
        role: input.requestedRole,
        labels: input.labels,
        enrollmentType: "oidc",
        identity,
        ownerId: identityKey(identity),
        autonomousRecovery: false,
        credentialDigest: minted.digest,
        credentialExpiresAt: minted.expiresAtMs,
        sessionExpiresAt: sessionEnd,
        enrolledAt: now,
        refreshedAt: undefined,
        banned: false,
        bannedAt: undefined,
      }
      // A new node is created only if none appeared meanwhile; an existing one is updated only while it is still
      // unbanned and this identity's (its ban and autonomous-recovery flag are not this flow's to change).
      const written = Option.isSome(existing) ? yield* nodes.reregister(record) : yield* nodes.create(record)
      if (!written) return yield* lostWrite(nodes, key.peerId)
      yield* Effect.logInfo("node enrolled").pipe(
        Effect.annotateLogs({
          peer_id: key.peerId,
          method: "oidc",
          role: input.requestedRole,
          ttl_ms: minted.expiresAtMs - now,
        }),
      )
      return minted
    })

    return { register }
  }),
)

/**
 * CredentialRefresh over Credentials, Nodes and Challenges.
 *
 * A credential signed by a retired key cannot be verified; a node with autonomous recovery may still trade it if it
 * names itself in the body, proves possession of its enrolled key, and presents exactly the credential last issued
 * to it. The swap of the current credential is one conditional update, so two refreshes with the same credential
 * (a replay, or a race) yield one new credential and one refusal.
 */
import { Clock, Effect, Either, Layer, Option } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { Forbidden, Unauthorized } from "../../domain/Errors.js"
import { identityKey, isAdmitted, type Node } from "../../domain/Node.js"
import * as PeerKey from "../../domain/PeerKey.js"
import * as PolicyRules from "../../domain/Policy.js"
import * as Spans from "../../platform/Spans.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { CredentialRefresh, messages, type RefreshRequest } from "../../services/identity/CredentialRefresh.js"
import { Credentials, digest, sameDigest } from "../../services/identity/Credentials.js"
import { Bans } from "../../services/nodes/Bans.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { Policy } from "../../services/policy/Policy.js"

export const layer = Layer.effect(
  CredentialRefresh,
  Effect.gen(function* () {
    const credentials = yield* Credentials
    const nodes = yield* Nodes
    const challenges = yield* Challenges
    const policy = yield* Policy
    const bans = yield* Bans
    const config = yield* ControlPlaneConfig

    const unauthorized = (message: string) => new Unauthorized({ message })

    /** An OIDC node keeps its role only while its identity is unbanned and the policy still binds the role to it. */
    const stillEntitled = (node: Node) =>
      Effect.gen(function* () {
        const identity = node.identity
        if (identity === undefined) return
        if (yield* bans.isIdentityBanned(identityKey(identity)))
          return yield* new Forbidden({ message: messages.identityBanned })
        const { document } = yield* policy.current
        if (!PolicyRules.rolesOf(document, { peerId: node.peerId, ...identity }, config.issuers).has(node.role)) {
          return yield* new Forbidden({ message: `role "${node.role}" is no longer bound to this identity` })
        }
      })

    /** Which node presents this credential, and whether it does so through autonomous recovery. */
    const identify = (request: RefreshRequest) =>
      credentials.verify(request.presented, { allowExpired: true }).pipe(
        Effect.flatMap(({ facts }) =>
          request.peerId.length > 0 && request.peerId !== facts.peerId
            ? Effect.fail(unauthorized(messages.peerMismatch))
            : Effect.succeed({ peerId: facts.peerId, recovering: false }),
        ),
        Effect.catchTag("CredentialRejected", (rejected) =>
          rejected.reason === "unknown_key" && request.peerId.length > 0
            ? Effect.succeed({ peerId: request.peerId, recovering: true })
            : Effect.fail(rejected.unauthorized),
        ),
      )

    return {
      refresh: (request) =>
        Effect.gen(function* () {
          const { peerId, recovering } = yield* identify(request)
          // Proof of possession first, against the key the peer id embeds: a caller without the node's key learns
          // nothing of its state (unknown, banned, session over).
          const publicKey = yield* Either.match(PeerKey.publicKeyOf(peerId), {
            onLeft: (reason) => Effect.fail(unauthorized(reason)),
            onRight: Effect.succeed,
          })
          yield* challenges.verify({
            endpoint: "refresh",
            peerId,
            publicKey,
            unixMs: request.challengeUnixMs,
            signature: request.challengeSignature,
          })
          const node: Node = yield* nodes
            .find(peerId)
            .pipe(
              Effect.flatMap(
                Option.match({ onNone: () => Effect.fail(unauthorized(messages.notEnrolled)), onSome: Effect.succeed }),
              ),
            )
          const now = yield* Clock.currentTimeMillis
          if (node.banned) return yield* new Forbidden({ message: messages.banned })
          if (!isAdmitted(node, now)) return yield* unauthorized(messages.sessionExpired)
          const presentedDigest = digest(request.presented)
          if (!sameDigest(presentedDigest, node.credentialDigest)) return yield* unauthorized(messages.superseded)
          if (recovering && !node.autonomousRecovery) return yield* unauthorized(messages.notOptedIn)
          if (node.identity !== undefined) yield* stillEntitled(node)

          const minted = yield* credentials.mint({
            peerId: node.peerId,
            role: node.role,
            labels: node.labels,
            ...(node.identity === undefined ? {} : { identity: node.identity }),
            ...(node.sessionExpiresAt === undefined ? {} : { notAfterMs: node.sessionExpiresAt }),
          })
          const swapped = yield* nodes.rotateCredential({
            peerId: node.peerId,
            previousDigest: presentedDigest,
            digest: minted.digest,
            expiresAt: minted.expiresAtMs,
            now,
          })
          if (!swapped) {
            // Refreshed by someone else meanwhile (a replay, a race), or banned after the checks above.
            const after = yield* nodes.find(node.peerId)
            if (Option.isSome(after) && after.value.banned) return yield* new Forbidden({ message: messages.banned })
            return yield* unauthorized(messages.superseded)
          }
          yield* Effect.logInfo("credential refreshed").pipe(
            Effect.annotateLogs({ peer_id: node.peerId, recovery: recovering, expires_at: minted.expiresAtMs }),
          )
          return minted
        }).pipe(Spans.withSpan("CredentialRefresh.refresh", {})),
    }
  }),
)

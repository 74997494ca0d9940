/**
 * Enrollment over the token, request and node stores. Every admission (auto-approve or operator approval) spends
 * the token usage, records the request and creates the node in one transaction: a crash leaves either all of it or
 * none, and concurrent enrollments can never spend more usages than the token has. A node that exists is never
 * overwritten: admission refuses, and re-enrollment and collection only swap the credential of a node that is still
 * unbanned, in the same statement that checks it.
 */
import { randomUUID } from "node:crypto"
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Either, Layer, Option } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import * as Token from "../../domain/BootstrapToken.js"
import * as Challenge from "../../domain/Challenge.js"
import type { EnrollmentRequest } from "../../domain/EnrollmentRequest.js"
import { BadRequest, Conflict, Forbidden, Gone, NotFound, Unauthorized } from "../../domain/Errors.js"
import * as Labels from "../../domain/Labels.js"
import type { Node } from "../../domain/Node.js"
import * as PeerKey from "../../domain/PeerKey.js"
import * as PolicyRules from "../../domain/Policy.js"
import * as Spans from "../../platform/Spans.js"
import { BootstrapTokens } from "../../services/enrollment/BootstrapTokens.js"
import {
  type BootstrapEnrollRequest,
  Enrollment,
  messages,
  type StatusQuery,
} from "../../services/enrollment/Enrollment.js"
import { EnrollmentRequests } from "../../services/enrollment/EnrollmentRequests.js"
import { Challenges } from "../../services/identity/Challenges.js"
import { Credentials, type Minted } from "../../services/identity/Credentials.js"
import { Bans } from "../../services/nodes/Bans.js"
import { CHANGED, lostWrite, Nodes } from "../../services/nodes/Nodes.js"
import { Audit } from "../../services/operations/Audit.js"
import { Policy } from "../../services/policy/Policy.js"
import { REPLAYED } from "../identity/ChallengesLive.js"

const badRequest = (message: string) => new BadRequest({ message })
const forbidden = (message: string) => new Forbidden({ message })

export const layer = Layer.effect(
  Enrollment,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ControlPlaneConfig
    const tokens = yield* BootstrapTokens
    const requests = yield* EnrollmentRequests
    const nodes = yield* Nodes
    const credentials = yield* Credentials
    const challenges = yield* Challenges
    const policy = yield* Policy
    const bans = yield* Bans
    const audit = yield* Audit

    /**
     * A token that may admit someone now: known, unrevoked, unexpired, owner not banned (which disables it even when
     * used up). Usages are checked later: an approved peer enrolling again spends none.
     */
    const usableToken = (token: Token.BootstrapToken, now: number) =>
      Effect.gen(function* () {
        const ownerBanned = token.ownerId !== undefined && (yield* bans.isIdentityBanned(token.ownerId))
        switch (Token.stateOf(token, now, ownerBanned)) {
          case "revoked":
            return yield* new Gone({ message: messages.tokenRevoked })
          case "expired":
            return yield* new Gone({ message: messages.tokenExpired })
          case "disabled":
            return yield* forbidden(messages.ownerBanned)
          default:
            return token
        }
      })

    /** Labels within the role's allowed_labels; no labels need no policy read. */
    const labelsAllowed = (role: string, labels: Readonly<Record<string, string>>) =>
      Object.keys(labels).length === 0
        ? Effect.void
        : Effect.flatMap(policy.current, (snapshot) =>
            Effect.mapError(PolicyRules.checkLabels(snapshot.document, [role], labels), forbidden),
          )

    const newNode = (
      request: Pick<EnrollmentRequest, "peerId" | "publicKey" | "requestedRole" | "labels">,
      token: Token.BootstrapToken,
      now: number,
    ): Node => ({
      peerId: request.peerId,
      publicKey: request.publicKey,
      role: request.requestedRole,
      labels: request.labels,
      enrollmentType: "bootstrap",
      identity: undefined,
      ownerId: token.ownerId,
      autonomousRecovery: token.autonomousRecovery,
      // No credential yet: it is minted when the enrollee collects it.
      credentialDigest: new Uint8Array(0),
      credentialExpiresAt: 0,
      sessionExpiresAt: undefined,
      enrolledAt: now,
      refreshedAt: undefined,
      banned: false,
      bannedAt: undefined,
    })

    /**
     * A new credential for an enrolled bootstrap node, made current only if the node is still unbanned; with a
     * `claim` (releasing an approval), only if the claim is won in the same transaction, else undefined.
     */
    const reissue = (node: Node, claim: Effect.Effect<boolean> = Effect.succeed(true)) =>
      Effect.gen(function* () {
        const minted = yield* credentials.mint({ peerId: node.peerId, role: node.role, labels: node.labels })
        const now = yield* Clock.currentTimeMillis
        return yield* Effect.gen(function* () {
          if (!(yield* claim)) return undefined
          const swapped = yield* nodes.reissue({
            peerId: node.peerId,
            role: node.role,
            digest: minted.digest,
            expiresAt: minted.expiresAtMs,
            now,
          })
          return swapped ? minted : yield* lostWrite(nodes, node.peerId)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      })

    /**
     * Spends a usage and creates the node (with its first credential when one was minted), and records or resolves
     * the request, all or nothing. A node of the same peer that appeared meanwhile is left alone: `conflict`.
     */
    const admit = <E>(
      request: EnrollmentRequest,
      token: Token.BootstrapToken,
      now: number,
      record: Effect.Effect<void, E>,
      conflict: string,
      credential?: Minted,
    ) =>
      Effect.gen(function* () {
        yield* record
        if (!(yield* tokens.spend(token.id, now))) return yield* new Gone({ message: messages.tokenUsedUp })
        const node = newNode(request, token, now)
        const created = yield* nodes.create(
          credential === undefined
            ? node
            : { ...node, credentialDigest: credential.digest, credentialExpiresAt: credential.expiresAtMs },
        )
        if (!created) return yield* new Conflict({ message: conflict })
        return node
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

    /** Moves a queued request to approved, or fails with 409 when someone resolved it first. */
    const resolveApproved = (request: EnrollmentRequest, by: string, now: number) =>
      Effect.flatMap(requests.resolve(request.id, "approved", by, now), (won) =>
        won
          ? audit.record({
              actor: by,
              action: "enrollment.approved",
              subject: request.id,
              details: { peer_id: request.peerId },
            })
          : Effect.fail(new Conflict({ message: messages.resolved })),
      )

    // A span only while tracing is on: `Effect.fn`'s captures a stack trace on every call, on the hot path.
    const enroll = Effect.fnUntraced(
      function* (input: BootstrapEnrollRequest) {
        const key = yield* Effect.mapError(PeerKey.bind(input.peerId, input.publicKey), badRequest)
        yield* Effect.mapError(Labels.validate(input.labels), badRequest)
        if (input.bootstrapToken.trim().length === 0) return yield* badRequest("bootstrap_token is required")
        yield* challenges.verifyOnce({
          endpoint: "enroll",
          peerId: key.peerId,
          publicKey: key.publicKey,
          unixMs: input.challengeUnixMs,
          signature: input.challengeSignature,
        })
        const now = yield* Clock.currentTimeMillis
        const token = yield* tokens.findBySecret(input.bootstrapToken).pipe(
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.fail(new Unauthorized({ message: messages.tokenInvalid })),
              onSome: Effect.succeed,
            }),
          ),
          Effect.flatMap((t) => usableToken(t, now)),
        )
        const role = input.requestedRole.length > 0 ? input.requestedRole : token.role
        if (role !== token.role) return yield* forbidden(`bootstrap token does not grant role "${role}"`)

        // An approved peer enrolling again: a new credential, no approval, no usage spent. OIDC nodes refresh or
        // register again instead, where their identity's ban and bindings are checked.
        const existing = yield* nodes.find(key.peerId)
        if (Option.isSome(existing)) {
          if (existing.value.banned) return yield* forbidden(messages.nodeBanned)
          if (existing.value.enrollmentType !== "bootstrap") return yield* forbidden(messages.oidcNode)
          if (existing.value.role !== role) return yield* forbidden(messages.otherRole)
          const credential = yield* reissue(existing.value)
          const previous = yield* requests.findByPeer(key.peerId)
          return {
            status: "approved" as const,
            requestId: Option.match(previous, { onNone: () => "", onSome: (r) => r.id }),
            credential,
          }
        }

        yield* labelsAllowed(role, input.labels)
        const previous = yield* requests.findByPeer(key.peerId)
        if (Option.isSome(previous)) {
          const p = previous.value
          if (p.status === "pending") return { status: "pending" as const, requestId: p.id }
          if (p.status === "rejected" && p.tokenId === token.id) return { status: "rejected" as const, requestId: p.id }
        }
        if (token.usagesCount >= token.maxUsages) return yield* new Gone({ message: messages.tokenUsedUp })

        const request: EnrollmentRequest = {
          id: randomUUID(),
          peerId: key.peerId,
          publicKey: key.publicKey,
          requestedRole: role,
          labels: input.labels,
          tokenId: token.id,
          status: config.autoApproveEnrollment ? "approved" : "pending",
          createdAt: now,
          resolvedAt: config.autoApproveEnrollment ? now : undefined,
          resolvedBy: config.autoApproveEnrollment ? "auto-approve" : undefined,
          // The auto-approved answer carries the credential: it is released here.
          releasedAt: config.autoApproveEnrollment ? now : undefined,
        }
        if (!config.autoApproveEnrollment) {
          yield* requests.save(request)
          yield* Effect.logInfo("enrollment queued").pipe(
            Effect.annotateLogs({ peer_id: key.peerId, request_id: request.id }),
          )
          return { status: "pending" as const, requestId: request.id }
        }
        // Minted before the transaction, so the node is created with its credential in one write.
        const credential = yield* credentials.mint({ peerId: key.peerId, role, labels: input.labels })
        yield* admit(
          request,
          token,
          now,
          Effect.zipRight(
            requests.save(request),
            audit.record({
              actor: "auto-approve",
              action: "enrollment.approved",
              subject: request.id,
              details: { peer_id: key.peerId },
            }),
          ),
          CHANGED,
          credential,
        )
        yield* Effect.logInfo("node enrolled").pipe(
          Effect.annotateLogs({ peer_id: key.peerId, method: "bootstrap", role, ttl_ms: credential.expiresAtMs - now }),
        )
        return { status: "approved" as const, requestId: request.id, credential }
      },
      Spans.withSpan("Enrollment.enroll", {}),
    )

    const status = Effect.fn("Enrollment.status")(function* (query: StatusQuery) {
      const unauthorized = new Unauthorized({ message: "unauthorized" })
      const peerId = Either.getOrUndefined(PeerKey.canonicalPeerId(query.peerId))
      const ts = Number(query.challengeUnixMs)
      const signature = Either.getOrUndefined(Challenge.fromHeader(query.challengeSignature ?? ""))
      if (peerId === undefined || !Number.isSafeInteger(ts) || signature === undefined) return yield* unauthorized
      const request = yield* requests.findByPeer(peerId)
      if (Option.isNone(request)) return yield* unauthorized
      // Single-use, like the proofs of /enroll and /register: a captured poll cannot be replayed.
      yield* challenges
        .verifyOnce({ endpoint: "enroll-status", peerId, publicKey: request.value.publicKey, unixMs: ts, signature })
        .pipe(Effect.mapError((error) => (error.message === REPLAYED ? error : unauthorized)))
      const r = request.value
      if (r.status !== "approved") return { status: r.status, requestId: r.id }
      const collected = { status: "approved" as const, requestId: r.id, credential: undefined }
      if (r.releasedAt !== undefined) return collected
      const node = yield* nodes.find(peerId)
      if (Option.isNone(node)) return yield* unauthorized
      if (node.value.banned) return yield* forbidden(messages.nodeBanned)
      // The release is claimed in the transaction that makes the credential current: once, and only if unbanned.
      const now = yield* Clock.currentTimeMillis
      const credential = yield* reissue(node.value, requests.release(r.id, now))
      return credential === undefined ? collected : { ...collected, credential }
    })

    const findRequest = (id: string) =>
      requests.find(id).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(new NotFound({ message: messages.noRequest })),
            onSome: Effect.succeed,
          }),
        ),
      )

    const approve = Effect.fn("Enrollment.approve")(function* (id: string, by: string) {
      const request = yield* findRequest(id)
      if (request.status !== "pending") return yield* new Conflict({ message: messages.resolved })
      const now = yield* Clock.currentTimeMillis
      const token = yield* tokens.find(request.tokenId).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(new Gone({ message: messages.tokenInvalid })),
            onSome: Effect.succeed,
          }),
        ),
        Effect.flatMap((t) => usableToken(t, now)),
      )
      yield* labelsAllowed(request.requestedRole, request.labels)
      yield* admit(request, token, now, resolveApproved(request, by, now), messages.alreadyEnrolled)
      yield* Effect.logInfo("enrollment approved").pipe(
        Effect.annotateLogs({ peer_id: request.peerId, request_id: id, by }),
      )
      return { ...request, status: "approved" as const, resolvedAt: now, resolvedBy: by }
    })

    const reject = Effect.fn("Enrollment.reject")(function* (id: string, by: string) {
      const request = yield* findRequest(id)
      const now = yield* Clock.currentTimeMillis
      const won = yield* Effect.gen(function* () {
        if (!(yield* requests.resolve(id, "rejected", by, now))) return false
        yield* audit.record({
          actor: by,
          action: "enrollment.rejected",
          subject: id,
          details: { peer_id: request.peerId },
        })
        return true
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      if (!won) return yield* new Conflict({ message: messages.resolved })
      yield* Effect.logInfo("enrollment rejected").pipe(
        Effect.annotateLogs({ peer_id: request.peerId, request_id: id, by }),
      )
      return { ...request, status: "rejected" as const, resolvedAt: now, resolvedBy: by }
    })

    return { enroll, status, pending: requests.list("pending"), approve, reject }
  }),
)

/**
 * Agents over the node's membership: minting appends to the current credential with the node's own key, so it needs
 * no control plane; verifying checks signatures against the control-plane keys the node trusts now. A verified token
 * is kept by the SHA-256 of its bytes (at most CACHE_SIZE, the oldest dropped first), so each token costs one biscuit
 * parse per node; every use still re-checks both expiries and that its root key is trusted.
 */
import { createHash } from "node:crypto"
import { Clock, Duration, Effect, Either, Layer, Redacted, Ref } from "effect"
import * as AgentToken from "../../crypto/AgentToken.js"
import * as Biscuit from "../../crypto/Biscuit.js"
import * as AgentScope from "../../domain/AgentScope.js"
import { BadRequest, Unavailable } from "../../domain/Errors.js"
import { Agents } from "../../services/agents/Agents.js"
import { Membership } from "../../services/member/Membership.js"

export const CACHE_SIZE = 1024

const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64")

export const layer = Layer.effect(
  Agents,
  Effect.gen(function* () {
    const membership = yield* Membership
    const cache = yield* Ref.make<ReadonlyMap<string, AgentToken.Verified>>(new Map())

    /** Verifies (or finds verified) and re-checks the times and the root key. */
    const verify = (text: string): Effect.Effect<Either.Either<AgentToken.Verified, string>> =>
      Effect.gen(function* () {
        const bytes = Biscuit.fromText(text)
        if (Either.isLeft(bytes)) return Either.left("the agent token is not base64")
        const trust = yield* membership.trust
        const now = yield* Clock.currentTimeMillis
        const key = digest(bytes.right)
        const known = (yield* Ref.get(cache)).get(key)
        if (known !== undefined) {
          if (trust.keyFor(known.keyId) === undefined) return Either.left(AgentToken.describe("unknown_key"))
          return Either.mapLeft(AgentToken.checkTimes(known, now), AgentToken.describe)
        }
        const verified = AgentToken.verify(bytes.right, trust.keyFor, now)
        if (Either.isLeft(verified)) return Either.left(AgentToken.describe(verified.left))
        yield* Ref.update(cache, (map) => {
          const next = new Map(map)
          if (next.size >= CACHE_SIZE) next.delete(next.keys().next().value as string)
          return next.set(key, verified.right)
        })
        return Either.right(verified.right)
      })

    const mint = (request: AgentScope.Request, ttl: Duration.Duration) =>
      Effect.gen(function* () {
        const checked = AgentScope.check(request)
        if (Either.isLeft(checked)) return yield* new BadRequest({ message: checked.left })
        const problem = yield* membership.credentialProblem
        if (problem._tag === "Some") return yield* new Unavailable({ message: problem.value })
        const credential = yield* membership.credential
        const trust = yield* membership.trust
        const now = yield* Clock.currentTimeMillis
        const minted = AgentToken.mint(
          credential,
          trust.keyFor,
          membership.signer.seed,
          checked.right,
          now + Duration.toMillis(ttl),
        )
        if (Either.isLeft(minted)) {
          return yield* new Unavailable({
            message: `this node's credential cannot carry an agent token now: ${AgentToken.describe(minted.left)}`,
          })
        }
        if (minted.right.scope.expiresAtMs <= now) {
          return yield* new Unavailable({ message: "this node's credential has expired: it cannot mint agent tokens" })
        }
        return { token: Redacted.make(Biscuit.toText(minted.right.token)), scope: minted.right.scope }
      })

    const local = (text: string) =>
      Effect.map(verify(text), (verified) =>
        Either.flatMap(verified, (v) =>
          v.node.peerId === membership.peerId
            ? Either.right({ scope: v.scope, token: Redacted.make(text) })
            : Either.left("the agent token was minted by another node"),
        ),
      )

    const fromPeer = (text: string, peerId: string) =>
      Effect.map(verify(text), (verified) =>
        Either.flatMap(verified, (v) =>
          v.node.peerId === peerId
            ? Either.right(v.scope)
            : Either.left("the agent token names another node than the calling peer"),
        ),
      )

    return Agents.of({ mint, local, fromPeer })
  }),
)

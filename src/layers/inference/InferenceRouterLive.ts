/**
 * InferenceRouter over the node's services: this node's inference services (LocalServices: published, listing the
 * model) are tried first, straight at their backends; then remote providers, from the model registry and the gossip
 * view (their load), reached through PeerProxy. Each request tries at most MAX_ATTEMPTS providers in rank order; a
 * busy or unreachable one is benched for Cooldowns.COOLDOWN and the next tried with the same body.
 */
import type { IncomingMessage } from "node:http"
import { Clock, Duration, Effect, Either, ExecutionStrategy, Exit, Layer, Option, Ref, Scope } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as Biscuit from "../../crypto/Biscuit.js"
import { ModelNotFound, NoAvailableProvider, NoEligibleProvider } from "../../domain/Errors.js"
import * as Forwarding from "../../domain/Forwarding.js"
import * as Inference from "../../domain/Inference.js"
import * as Policy from "../../domain/Policy.js"
import { NODE_ROLE } from "../../domain/Policy.js"
import * as TraceContext from "../../http/TraceContext.js"
import type { AuthenticatedPeer } from "../../p2p/Trust.js"
import * as Deadlines from "../../platform/Deadlines.js"
import * as Spans from "../../platform/Spans.js"
import { Discovery } from "../../services/discovery/Discovery.js"
import {
  type Answer,
  type CompletionRequest,
  InferenceRouter,
  type RoutingError,
} from "../../services/inference/InferenceRouter.js"
import { LocalServices } from "../../services/local/LocalServices.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { PolicyView } from "../../services/node/PolicyView.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { PeerProxy } from "../../services/proxy/PeerProxy.js"
import * as Cooldowns from "./Cooldowns.js"
import { deliver, UsageTap } from "./Delivery.js"
import * as InferenceMetrics from "./InferenceMetrics.js"
import * as LocalBackend from "./LocalBackend.js"
import * as ModelRegistry from "./ModelRegistry.js"

/** Why a provider was passed over. */
type Failure =
  | { readonly _tag: "Status"; readonly status: number }
  | { readonly _tag: "Connection"; readonly reason: string }
  /** No response head within the time-to-headers limit; the request was abandoned. */
  | { readonly _tag: "Timeout"; readonly reason: string }
  /** Its verified credential lacks the labels required (checked when the proxy reached it); nothing was sent. */
  | { readonly _tag: "Labels"; readonly reason: string }
  /** This node's copy of the policy does not let it call the provider; nothing was sent. */
  | { readonly _tag: "Policy"; readonly reason: string }

/** Refusals made before anything was sent: they neither bench the provider nor use up an attempt. */
const unsent = (failure: Failure): boolean => failure._tag === "Labels" || failure._tag === "Policy"

interface Passed {
  readonly candidate: Inference.Candidate
  readonly failure: Failure
}

const describeFailure = (passed: Passed): string => {
  const who = `${passed.candidate.local ? "local service" : `peer ${passed.candidate.peerId}`} ${passed.candidate.service}`
  const failure = passed.failure
  return failure._tag === "Status"
    ? `${who} answered ${failure.status}`
    : failure._tag === "Connection" || failure._tag === "Timeout"
      ? `${who} did not answer (${failure.reason})`
      : failure._tag === "Labels"
        ? `${who} does not attest the required labels`
        : `${who} may not be called under this node's copy of the policy (${failure.reason})`
}

const pairs = (labels: Readonly<Record<string, string>>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(",")

/** Unconfirmed gossip announcers of a model whose own model list is asked for at once. */
const CONFIRM_CONCURRENCY = 10
/** Gossip-only announcers of a model considered per request at most (announcements come newest first). */
const MAX_UNCONFIRMED = 16

/** How long the remote providers found for a model are reused. */
const REMOTE_REUSE_MS = 1000
const MAX_CACHED_MODELS = 1024

const nanosToSeconds = (nanos: bigint): number => Number(nanos) / 1e9

export const layer = Layer.scoped(
  InferenceRouter,
  Effect.gen(function* () {
    const host = yield* MeshHost
    const membership = yield* Membership
    const local = yield* LocalServices
    const discovery = yield* Discovery
    const proxy = yield* PeerProxy
    const settings = yield* NodeConfig
    const policy = yield* PolicyView
    const headersTimeout = settings.inferenceHeadersTimeout
    const floor = settings.file.egress.require_labels
    const metrics = InferenceMetrics.make(yield* Metrics)
    const registry = yield* ModelRegistry.make
    const backends = yield* LocalBackend.make(settings.file.services)
    const cooldowns = yield* Cooldowns.make
    const turns = yield* Ref.make(0)
    const self = host.peerId

    /** What our credential attests (labels, role, identity), read again only when the credential changes. */
    const ownCache = yield* Ref.make<
      { readonly credential: Uint8Array; readonly facts: Biscuit.Facts | undefined } | undefined
    >(undefined)
    const ownFacts = Effect.gen(function* () {
      const credential = yield* membership.credential
      const cached = yield* Ref.get(ownCache)
      if (cached?.credential === credential) return cached.facts
      const verified = Biscuit.verify(credential, (yield* membership.trust).keyFor, yield* Clock.currentTimeMillis, {
        allowExpired: true,
      })
      const facts = Either.isRight(verified) ? verified.right.facts : undefined
      yield* Ref.set(ownCache, { credential, facts })
      return facts
    })
    const ownLabels = Effect.map(ownFacts, (facts) => facts?.labels ?? {})

    /**
     * Whether this node's copy of the policy lets it call `service` on `peer`, as the peer's own side will decide:
     * a provider that would refuse is never sent the request (nor can it blackhole one).
     */
    const allowedBy = (peer: AuthenticatedPeer, service: string): Effect.Effect<Option.Option<string>> =>
      Effect.gen(function* () {
        const snapshot = yield* policy.current
        if (Option.isNone(snapshot)) return Option.some("no copy of the mesh policy yet")
        const doc = snapshot.value.document
        const known = yield* policy.issuers
        const facts = yield* ownFacts
        const role = facts?.role ?? NODE_ROLE
        const roles = Policy.callerRoles(doc, role, Policy.subjectOf(self, facts?.identity), known)
        const decision = Policy.authorizeService(
          doc,
          roles,
          { type: "inference", name: service, path: "" },
          Policy.subjectOf(peer.peerId, peer.identity),
          known,
        )
        return decision._tag === "Denied" ? Option.some(`rule ${decision.rule}`) : Option.none()
      })

    const localModels = Effect.map(local.published, (services) =>
      services.filter((s) => s.type === "inference" && backends.has(s.name)),
    )

    const models = Effect.gen(function* () {
      const mine = (yield* localModels).flatMap((s) => s.keys.map((id) => ({ id, owned_by: self })))
      // With models of our own the listing is not empty, so an empty remote view is kept like any other.
      // The view is kept a while; a peer banned meanwhile leaves the listing at once, as it leaves routing.
      const banned = yield* membership.banned
      const theirs = (yield* registry.fresh(mine.length > 0))
        .filter((m) => !banned.has(m.peerId))
        .map((m) => ({ id: m.id, owned_by: m.peerId }))
      return Inference.modelList(mine, theirs)
    })

    const localCandidates = (model: string, labels: Readonly<Record<string, string>>) =>
      Effect.map(localModels, (services) =>
        services
          .filter((s) => s.keys.includes(model))
          .map((s): Inference.Candidate => ({ peerId: self, service: s.name, local: true, labels, load: s.inFlight })),
      )

    /** Peers serving the model, from a registry view and the gossip view; labels as verified when we can. */
    const remoteCandidates = (model: string, view: ReadonlyArray<ModelRegistry.RemoteModel>) =>
      Effect.gen(function* () {
        const heard = yield* discovery.announcers("inference", model)
        const banned = yield* membership.banned
        const found = new Map<string, Omit<Inference.Candidate, "local">>()
        for (const m of view) {
          if (m.id === model) found.set(`${m.peerId}/${m.service}`, { ...m, load: 0 })
        }
        for (const a of heard) {
          const key = `${a.peerId}/${a.service}`
          const known = found.get(key)
          const labels = known !== undefined && !a.labelsAttested ? known.labels : a.labels
          found.set(key, { peerId: a.peerId, service: a.service, labels, load: a.activeRequests })
        }
        const listed = new Set(view.filter((m) => m.id === model).map((m) => `${m.peerId}/${m.service}`))
        const eligible = [...found.entries()].filter(([, c]) => c.peerId !== self && !banned.has(c.peerId))
        // Heard of only through gossip: tried only when its own model list holds the model. The newest few are
        // asked, so that announcers by the hundred cannot hold a request up.
        const unconfirmed = new Set(
          eligible
            .filter(([key]) => !listed.has(key))
            .slice(0, MAX_UNCONFIRMED)
            .map(([key]) => key),
        )
        const kept = yield* Effect.filter(
          eligible.filter(([key]) => listed.has(key) || unconfirmed.has(key)),
          ([key, c]) => (listed.has(key) ? Effect.succeed(true) : registry.lists(c.peerId, c.service, model)),
          { concurrency: CONFIRM_CONCURRENCY },
        )
        const out: Array<Inference.Candidate> = []
        for (const [, c] of kept) {
          const peer = yield* host.peer(c.peerId)
          out.push({ ...c, local: false, labels: Option.isSome(peer) ? peer.value.labels : c.labels })
        }
        return out
      })

    /**
     * The same, reused for up to a second per model and registry view: gossip only changes load every few seconds,
     * and asking the gossip view on every request cost a tenth of a millisecond. Only known models are kept.
     */
    const remoteCache = yield* Ref.make<
      ReadonlyMap<
        string,
        {
          readonly atMs: number
          readonly view: ReadonlyArray<ModelRegistry.RemoteModel>
          readonly candidates: ReadonlyArray<Inference.Candidate>
        }
      >
    >(new Map())
    const remotesOf = (model: string, view: ReadonlyArray<ModelRegistry.RemoteModel>, nowMs: number) =>
      Effect.gen(function* () {
        const hit = (yield* Ref.get(remoteCache)).get(model)
        if (hit !== undefined && hit.view === view && nowMs - hit.atMs < REMOTE_REUSE_MS) return hit.candidates
        const candidates = yield* remoteCandidates(model, view)
        if (candidates.length > 0) {
          yield* Ref.update(remoteCache, (cache) => {
            const next = cache.size >= MAX_CACHED_MODELS ? new Map() : new Map(cache)
            return next.set(model, { atMs: nowMs, view, candidates })
          })
        }
        return candidates
      })

    /** The peer reached and authenticated, and this node's policy copy lets it call the provider. */
    const checkPolicy = (candidate: Inference.Candidate) =>
      Effect.gen(function* () {
        const peer = yield* host
          .connect(candidate.peerId)
          .pipe(Effect.mapError((e): Failure => ({ _tag: "Connection", reason: `unreachable: ${e.reason}` })))
        const denied = yield* allowedBy(peer, candidate.service)
        if (Option.isSome(denied)) return yield* Effect.fail<Failure>({ _tag: "Policy", reason: denied.value })
      })

    // The time-to-headers limit is watched by the waits for a head (a local backend's, a peer's in the proxy's
    // exchange), not raced by a fiber: a fork per attempt cost a local completion a fifth of its CPU. A dial to a
    // peer ends on its own deadline.
    const deadlines = yield* Deadlines.make(Deadlines.tickFor([headersTimeout]))
    const late: Failure = { _tag: "Timeout", reason: `no response head within ${Duration.format(headersTimeout)}` }

    /** The request sent to one provider, until its answer's head or `deadline`. */
    const send = (
      candidate: Inference.Candidate,
      request: CompletionRequest,
      headers: Forwarding.OutgoingHeaders,
      deadline: Deadlines.Expiry,
    ): Effect.Effect<IncomingMessage, Failure, Scope.Scope> =>
      candidate.local
        ? Effect.zipRight(
            local.track("inference", candidate.service),
            Effect.flatMap(
              TraceContext.inject(
                Forwarding.toBackend(headers, { peerId: self, role: NODE_ROLE, labels: candidate.labels }, ""),
              ),
              (outgoing) =>
                backends
                  .send(candidate.service, request.path, request.query, outgoing, request.body, deadline)
                  .pipe(Effect.mapError((reason): Failure => ({ _tag: "Connection", reason }))),
            ),
          )
        : Effect.zipRight(
            checkPolicy(candidate),
            proxy
              .forward({
                peerId: candidate.peerId,
                type: "inference",
                name: candidate.service,
                path: request.path,
                query: request.query,
                method: "POST",
                headers,
                body: request.body,
                ...(request.requiredLabels === undefined ? {} : { requiredLabels: request.requiredLabels }),
                headDeadline: deadline,
              })
              .pipe(
                Effect.mapError(
                  (error): Failure =>
                    error._tag === "Forbidden"
                      ? { _tag: "Labels", reason: error.message }
                      : { _tag: "Connection", reason: error.message },
                ),
              ),
          )

    /**
     * One provider: its answer's head, or why it was passed over. The request lives as long as the scope. Only the
     * head is waited for within the limit: once it arrived the answer streams for as long as it lasts.
     */
    const attempt = (
      candidate: Inference.Candidate,
      request: CompletionRequest,
      headers: Forwarding.OutgoingHeaders,
      index: number,
    ) =>
      Effect.gen(function* () {
        const startedAt = yield* Clock.currentTimeNanos
        const deadline = Deadlines.expiry(deadlines, headersTimeout)
        const response = yield* send(candidate, request, headers, deadline).pipe(
          // Whatever failed once the limit had passed failed for want of a head in time.
          Effect.mapError((failure): Failure => (deadline.expired() ? late : failure)),
          Effect.ensuring(Effect.sync(deadline.cancel)),
        )
        const headAt = yield* Clock.currentTimeNanos
        const status = response.statusCode ?? 502
        yield* Spans.annotate("http.response.status_code", status)
        if (Inference.passesOver(status, candidate.local)) {
          return yield* Effect.fail<Failure>({ _tag: "Status", status })
        }
        return { response, status, providerNanos: headAt - startedAt }
      }).pipe(
        // Interruptible whatever the caller's region: a client gone stops the wait for a head.
        Effect.interruptible,
        Spans.withSpan("inference.attempt", {
          kind: "client",
          captureStackTrace: false,
          attributes: {
            "gen_ai.request.model": request.model,
            "mesh.inference.provider": candidate.service,
            "mesh.peer.id": candidate.peerId,
            "mesh.inference.local": candidate.local,
            "mesh.inference.attempt": index + 1,
            "mesh.inference.fallback": index > 0,
          },
        }),
      )

    const complete = (request: CompletionRequest): Effect.Effect<Answer, RoutingError, Scope.Scope> =>
      Effect.gen(function* () {
        const model = request.model
        const outer = yield* Effect.scope
        const nowMs = yield* Clock.currentTimeMillis
        const input: Inference.RankInput = {
          model,
          required: request.requiredLabels,
          floor,
          coolingUntil: yield* cooldowns.current,
          nowMs,
          turn: yield* Ref.getAndUpdate(turns, (n) => n + 1),
        }
        const headers = Inference.providerHeaders(request.headers, request.body.byteLength)
        const passed: Array<Passed> = []

        const refuse = (error: RoutingError, reason: InferenceMetrics.ErrorReason, known: boolean) =>
          Effect.flatMap(Clock.currentTimeNanos, (now) => {
            metrics.refused(
              known ? model : InferenceMetrics.UNKNOWN_MODEL,
              error._tag === "ModelNotFound" ? 404 : error._tag === "NoEligibleProvider" ? 403 : 503,
              reason,
              nanosToSeconds(now - request.receivedAtNanos),
            )
            return Effect.fail(error)
          })

        /** Tries the ranked providers in turn, within the attempt budget; the first that answers, if any. */
        const tryInTurn = (ranked: ReadonlyArray<Inference.Candidate>) =>
          Effect.gen(function* () {
            for (const candidate of ranked) {
              if (passed.filter((p) => p.failure._tag !== "Policy").length >= Inference.MAX_ATTEMPTS) return undefined
              // The attempt's own scope: closed at once when it fails, else with the request (defects too).
              const scope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
              const result = yield* Effect.either(
                attempt(candidate, request, headers, passed.length).pipe(Scope.extend(scope)),
              )
              if (Either.isRight(result)) return { candidate, ...result.right }
              yield* Scope.close(scope, Exit.void)
              const failure = result.left
              passed.push({ candidate, failure })
              const reason = InferenceMetrics.fallbackReason(failure)
              metrics.fallback(model, candidate.peerId, reason)
              if (!unsent(failure)) yield* cooldowns.bench(Inference.cooldownKey(candidate, model))
              yield* Effect.logInfo("inference provider passed over").pipe(
                Effect.annotateLogs({ model, peer: candidate.peerId, service: candidate.service, reason }),
              )
            }
            return undefined
          })

        const locals = yield* localCandidates(model, yield* ownLabels)
        const localRanking = Inference.rank(locals, input)
        let won = yield* tryInTurn(localRanking.ordered)
        let remoteRanking: Inference.Ranking | undefined
        if (won === undefined) {
          let remotes = yield* remotesOf(model, yield* registry.kept, nowMs)
          // Nobody we know of serves it: look once more, in case a provider appeared since the last listing.
          if (locals.length === 0 && remotes.length === 0) {
            remotes = yield* remoteCandidates(model, yield* registry.refresh(nowMs))
          }
          if (locals.length === 0 && remotes.length === 0) {
            return yield* refuse(
              new ModelNotFound({ message: "no reachable provider serves the requested model" }),
              "model_not_found",
              false,
            )
          }
          remoteRanking = Inference.rank(remotes, input)
          won = yield* tryInTurn(remoteRanking.ordered)
        }

        if (won === undefined) {
          const rankings = remoteRanking === undefined ? [localRanking] : [localRanking, remoteRanking]
          const sent = passed.filter((p) => !unsent(p.failure))
          const cooling = rankings.flatMap((r) => (r.coolingUntilMs === undefined ? [] : [r.coolingUntilMs]))
          if (sent.length === 0 && cooling.length === 0 && passed.every((p) => p.failure._tag === "Policy")) {
            return yield* refuse(
              new NoEligibleProvider({
                message: "this node's copy of the mesh policy lets it call no provider of the requested model",
              }),
              "no_eligible_provider",
              true,
            )
          }
          if (sent.length === 0 && cooling.length === 0) {
            const wanted = [
              request.requiredLabels === undefined ? [] : [`one of ${pairs(request.requiredLabels)}`],
              Object.keys(floor).length === 0 ? [] : [`all of the operator's egress.require_labels (${pairs(floor)})`],
            ].flat()
            return yield* refuse(
              new NoEligibleProvider({
                message: `no provider of the requested model attests ${wanted.join(" and ")}`,
              }),
              "no_eligible_provider",
              true,
            )
          }
          const untried = rankings.reduce((n, r) => n + r.ordered.length, 0) - passed.length
          const now = yield* Clock.currentTimeMillis
          const retryMs =
            untried > 0 ? 1000 : Math.min(...cooling, ...(sent.length > 0 ? [now + Cooldowns.COOLDOWN_MS] : [])) - now
          const failed = passed.map(describeFailure)
          const benched = cooling.length > 0 ? ["others are cooling down after recent failures"] : []
          return yield* refuse(
            new NoAvailableProvider({
              message: `no provider of the requested model is available: ${[...failed, ...benched].join("; ")}`,
              retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)),
            }),
            "no_available_provider",
            true,
          )
        }

        const { candidate, response, status, providerNanos } = won
        const tap = new UsageTap(response.headers)
        const send = (res: Parameters<Answer["send"]>[0]) =>
          Effect.gen(function* () {
            const sentAt = yield* Clock.currentTimeNanos
            const overhead = sentAt - request.receivedAtNanos - providerNanos
            metrics.overhead(candidate.local, nanosToSeconds(overhead))
            yield* deliver(
              response,
              res,
              {
                "x-mesh-provider": candidate.peerId,
                "x-mesh-overhead-ms": (Number(overhead) / 1e6).toFixed(3),
              },
              tap,
            )
          }).pipe(
            Effect.ensuring(
              Effect.flatMap(Clock.currentTimeNanos, (end) =>
                Effect.sync(() =>
                  metrics.answered(
                    model,
                    candidate.peerId,
                    status,
                    nanosToSeconds(end - request.receivedAtNanos),
                    response.complete,
                    response.complete ? tap.usage() : undefined,
                  ),
                ),
              ),
            ),
          )
        return { provider: candidate.peerId, local: candidate.local, status, send } satisfies Answer
      })

    return InferenceRouter.of({ peerId: self, models, complete })
  }),
)

/**
 * The node's lifecycle fiber. Without an identity and without a way to get one (bootstrap token, ID token) the node
 * waits in the login-required phase, looking for an identity that `mesh-node join` may write into the data folder
 * meanwhile. Once it has one it builds the member layer (enrolling first if needed), retrying with backoff while the
 * control plane is unreachable or refuses, and then serves as a member until it stops.
 */
import {
  Cause,
  Context,
  Duration,
  Effect,
  ExecutionStrategy,
  Exit,
  Layer,
  Option,
  Schedule,
  Scope,
  Stream,
  SubscriptionRef,
} from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import { joinCommand } from "../../domain/LoginCommand.js"
import { describe } from "../../platform/Describe.js"
import { Membership } from "../../services/member/Membership.js"
import { RouterLinks } from "../../services/mesh/RouterLinks.js"
import { NodeLifecycle, type Phase } from "../../services/node/NodeLifecycle.js"
import * as ControlPlaneClientLive from "../member/ControlPlaneClientLive.js"
import * as MemberStore from "../member/MemberStore.js"
import * as MemberLive from "./MemberLive.js"

/** How often a login-required node looks for an identity written by `join`. */
const IDENTITY_POLL = Duration.seconds(2)
const RETRY = Schedule.exponential(Duration.seconds(1), 2).pipe(Schedule.union(Schedule.spaced(Duration.seconds(30))))

export const layer = Layer.scoped(
  NodeLifecycle,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const store = MemberStore.inDirectory(settings.dataDir)
    const phase = yield* SubscriptionRef.make<Phase>({ _tag: "Starting", step: "starting", lastError: Option.none() })
    const scope = yield* Effect.scope

    /** The control plane to join, when the node also has an identity or the means to enroll. */
    const joinable = Effect.gen(function* () {
      const url = Option.isSome(settings.controlPlaneUrl) ? settings.controlPlaneUrl : yield* store.loadControlPlane
      const enrolled = Option.isSome(yield* store.loadCredential)
      const canEnroll = Option.isSome(settings.bootstrapToken) || Option.isSome(settings.jwtPath)
      return enrolled || canEnroll ? url : Option.none()
    }).pipe(
      // A corrupt file in the data folder needs the operator: say so in the phase, and look again until fixed.
      Effect.tapError((error) =>
        SubscriptionRef.set(phase, {
          _tag: "Starting",
          step: "reading the data folder",
          lastError: Option.some(error.message),
        }),
      ),
      Effect.retry(Schedule.spaced(IDENTITY_POLL)),
    )

    /** One attempt to build the member layer in a scope of its own, closed again if the attempt fails. */
    const buildMember = (url: string) =>
      Effect.gen(function* () {
        const child = yield* Scope.fork(scope, ExecutionStrategy.sequential)
        return yield* Layer.buildWithScope(MemberLive.layer(settings, url), child).pipe(
          Effect.onExit((exit) => (Exit.isFailure(exit) ? Scope.close(child, exit) : Effect.void)),
        )
      })

    /**
     * Said once when the node starts waiting for a login: the command that logs it in, and whether the control plane
     * it would join answers at all (a dead one would otherwise show only when the user tries to join).
     */
    const tellLogin = Effect.gen(function* () {
      const controlPlane = Option.isSome(settings.controlPlaneUrl)
        ? settings.controlPlaneUrl
        : yield* store.loadControlPlane.pipe(Effect.orElseSucceed(() => Option.none<string>()))
      yield* Effect.logWarning("not logged in to a mesh: serving only the login instructions until it is").pipe(
        Effect.annotateLogs({ log_in_with: joinCommand(Option.getOrUndefined(controlPlane), settings.dataDir) }),
      )
      if (Option.isNone(controlPlane)) {
        return yield* Effect.logWarning("no control plane known: give --control-plane (or MESH_CONTROL_PLANE)")
      }
      yield* ControlPlaneClientLive.make(controlPlane.value).info.pipe(
        Effect.matchEffect({
          onFailure: (error) => Effect.logWarning(error.message),
          onSuccess: () =>
            Effect.logInfo("control plane answers").pipe(Effect.annotateLogs({ control_plane: controlPlane.value })),
        }),
        Effect.fork,
      )
    })

    const run = Effect.gen(function* () {
      let url = yield* joinable
      if (Option.isNone(url)) yield* tellLogin
      while (Option.isNone(url)) {
        yield* SubscriptionRef.set(phase, { _tag: "LoginRequired" })
        yield* Effect.sleep(IDENTITY_POLL)
        url = yield* joinable
      }
      const controlPlane = url.value
      yield* SubscriptionRef.set(phase, { _tag: "Starting", step: "joining the mesh", lastError: Option.none() })
      // Every failure is retried, defects included: a node that gives up stays useless until someone restarts it.
      const context = yield* buildMember(controlPlane).pipe(
        Effect.sandbox,
        Effect.tapError((cause) =>
          Effect.zipRight(
            Effect.logWarning("joining the mesh failed; retrying", cause),
            SubscriptionRef.set(phase, {
              _tag: "Starting",
              step: "joining the mesh",
              lastError: Option.some(describe(Cause.squash(cause), 300)),
            }),
          ),
        ),
        Effect.retry(RETRY),
        Effect.orDie,
      )
      const peerId = Context.get(context, Membership).peerId
      yield* SubscriptionRef.set(phase, { _tag: "Member", peerId, context })
    })
    yield* Effect.forkScoped(run)

    return NodeLifecycle.of({
      phase: SubscriptionRef.get(phase),
      connected: Effect.flatMap(SubscriptionRef.get(phase), (p) =>
        p._tag === "Member" ? Context.get(p.context, RouterLinks).connected : Effect.succeed(false),
      ),
      nextChange: phase.changes.pipe(Stream.drop(1), Stream.take(1), Stream.runDrain),
    })
  }),
)

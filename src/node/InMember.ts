/** Runs a handler inside the member's context: the services that exist once the node has joined the mesh. */
import { Effect } from "effect"
import { Unavailable } from "../domain/Errors.js"
import { type MemberServices, NodeLifecycle } from "../services/node/NodeLifecycle.js"

export const inMember = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, E | Unavailable, Exclude<R, MemberServices> | NodeLifecycle> =>
  Effect.flatMap(NodeLifecycle, (lifecycle) =>
    Effect.flatMap(
      lifecycle.phase,
      (phase): Effect.Effect<A, E | Unavailable, Exclude<R, MemberServices>> =>
        phase._tag === "Member"
          ? Effect.provide(effect, phase.context)
          : Effect.fail(new Unavailable({ message: "this node has not joined the mesh yet" })),
    ),
  )

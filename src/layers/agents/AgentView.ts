/**
 * What an agent is shown: lists of tools, services and models cut to its scope, so an agent learns of nothing it
 * could not call. Listing tools read these; nothing is cut for a caller with the node's own token.
 */
import { Effect, Either, Option } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import type { ServiceType } from "../../domain/ServiceType.js"
import * as ToolName from "../../domain/ToolName.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"

/** A service the agent may reach by some rule of its scope (its methods and paths are checked per request). */
export const serviceVisible = (scope: AgentScope.Scope, type: ServiceType, name: string): boolean =>
  AgentScope.serviceAllowed(scope, {
    type,
    name,
    method: scope.methods[0] ?? "GET",
    path: scope.paths[0]?.replace(/\*$/, "") ?? "",
  })._tag === "Allowed"

/** Keeps the items the request's agent may see; all of them when the request is no agent's. */
export const keep = <A>(
  items: ReadonlyArray<A>,
  visible: (scope: AgentScope.Scope, item: A) => boolean,
): Effect.Effect<ReadonlyArray<A>> =>
  Effect.map(Effect.serviceOption(CurrentAgent), (agent) =>
    Option.isNone(agent) ? items : items.filter((item) => visible(agent.value.scope, item)),
  )

/** A namespaced tool name (`mcp://svc/tool`) the agent may call. */
export const toolVisible = (scope: AgentScope.Scope, namespaced: string | undefined): boolean => {
  if (namespaced === undefined) return false
  const parsed = ToolName.parse(namespaced)
  return (
    Either.isRight(parsed) && AgentScope.toolAllowed(scope, parsed.right.service, parsed.right.tool)._tag === "Allowed"
  )
}

/**
 * Which federated tools a caller may see and call: an agent sees and calls only the tools its scope covers (the same
 * rule `call_remote_tool` applies, `AgentScope.toolAllowed`); the node's own token sees them all.
 */
import { Context, Layer } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import type { Caller, FederatedTool } from "./Federation.js"

export interface FederationScopeService {
  readonly visible: (caller: Caller, tool: FederatedTool) => boolean
}

export class FederationScope extends Context.Tag("mesh/FederationScope")<FederationScope, FederationScopeService>() {}

/** The caller's agent scope decides; a caller without one sees every federated tool. */
export const byAgentScope = Layer.succeed(
  FederationScope,
  FederationScope.of({
    visible: (caller, tool) =>
      caller.scope === undefined || AgentScope.toolAllowed(caller.scope, tool.service, tool.tool)._tag === "Allowed",
  }),
)

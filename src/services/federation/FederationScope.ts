/**
 * Which federated tools a caller may see and call: the one hook for agent scopes. Everything is visible until an
 * agent's scope is wired here (a layer of this Tag that reads the caller's scope).
 */
import { Context, Layer } from "effect"
import type { Caller, FederatedTool } from "./Federation.js"

export interface FederationScopeService {
  readonly visible: (caller: Caller, tool: FederatedTool) => boolean
}

export class FederationScope extends Context.Tag("mesh/FederationScope")<FederationScope, FederationScopeService>() {}

/** No scopes: every caller sees every federated tool. */
export const everything = Layer.succeed(FederationScope, FederationScope.of({ visible: () => true }))

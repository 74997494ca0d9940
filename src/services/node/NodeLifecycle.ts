/**
 * Where the running node stands: waiting for someone to log it in, starting (enrolling, waiting for approval, or
 * retrying an unreachable control plane), or a member of the mesh with its services running. Routes that need the
 * mesh run inside the member's context through `inMember`; before that they answer 503.
 */
import { Context, type Effect, type Option } from "effect"
import type { Agents } from "../agents/Agents.js"
import type { Discovery } from "../discovery/Discovery.js"
import type { InferenceRouter } from "../inference/InferenceRouter.js"
import type { LocalServices } from "../local/LocalServices.js"
import type { McpGateway } from "../mcp/McpGateway.js"
import type { PeerMcp } from "../mcp/PeerMcp.js"
import type { StdioServers } from "../mcp/StdioServers.js"
import type { Membership } from "../member/Membership.js"
import type { HolePunch } from "../mesh/HolePunch.js"
import type { MeshHost } from "../mesh/MeshHost.js"
import type { RouterLinks } from "../mesh/RouterLinks.js"
import type { PeerIngress } from "../proxy/PeerIngress.js"
import type { PeerProxy } from "../proxy/PeerProxy.js"
import type { PolicyView } from "./PolicyView.js"

/** The services that exist once the node is a member; routes that need the mesh require these. */
export type MemberServices =
  | Membership
  | MeshHost
  | HolePunch
  | RouterLinks
  | PolicyView
  | McpGateway
  | PeerMcp
  | StdioServers
  | LocalServices
  | Discovery
  | PeerProxy
  | PeerIngress
  | InferenceRouter
  | Agents

export type Phase =
  /** No identity and no way to enroll: only the login instructions are served. */
  | { readonly _tag: "LoginRequired" }
  /** Enrolling or connecting; `lastError` says why an earlier attempt failed. */
  | { readonly _tag: "Starting"; readonly step: string; readonly lastError: Option.Option<string> }
  | { readonly _tag: "Member"; readonly peerId: string; readonly context: Context.Context<MemberServices> }

export interface NodeLifecycleService {
  readonly phase: Effect.Effect<Phase>
  /** True once a member with at least one authenticated router connection. */
  readonly connected: Effect.Effect<boolean>
  /** Completes when the phase next changes. */
  readonly nextChange: Effect.Effect<void>
}

export class NodeLifecycle extends Context.Tag("mesh/NodeLifecycle")<NodeLifecycle, NodeLifecycleService>() {}

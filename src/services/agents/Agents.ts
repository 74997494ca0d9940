/**
 * The node's agents: tokens minted from the node's own credential (no control-plane round trip), and verified when
 * presented, to this node's local API by an agent, or by a peer on a proxy stream on an agent's behalf. See
 * crypto/AgentToken.ts for the format and docs/decisions.md for why it is safe.
 */
import { Context, type Duration, type Effect, type Either, type Redacted } from "effect"
import type * as AgentScope from "../../domain/AgentScope.js"
import type { BadRequest, Unavailable } from "../../domain/Errors.js"
import type { Agent } from "./CurrentAgent.js"

export interface Minted {
  readonly token: Redacted.Redacted<string>
  readonly scope: AgentScope.Scope
}

export interface AgentsService {
  /** Appends the agent block to this node's current credential; the expiry is `ttl` from now, at most the credential's. */
  readonly mint: (
    request: AgentScope.Request,
    ttl: Duration.Duration,
  ) => Effect.Effect<Minted, BadRequest | Unavailable>
  /** A token presented to this node's local API: it must be this node's and valid now. Left: why not. */
  readonly local: (token: string) => Effect.Effect<Either.Either<Agent, string>>
  /** A token a peer sent with a request: its credential must name that peer. Left: why not. */
  readonly fromPeer: (token: string, peerId: string) => Effect.Effect<Either.Either<AgentScope.Scope, string>>
}

export class Agents extends Context.Tag("mesh/agents/Agents")<Agents, AgentsService>() {}

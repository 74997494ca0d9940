/**
 * The node's copy of the mesh policy, read from the control plane with the node's credential (`GET /policies`) at
 * start, every sync interval and when a signed policy event arrives. The serving side of the node enforces it; until
 * a first copy arrives, nothing is allowed.
 */
import { Context, type Effect, type Option } from "effect"
import type * as Policy from "../../domain/Policy.js"

export interface PolicySnapshot {
  readonly document: Policy.Document
  readonly version: number
  readonly fetchedAtMs: number
}

export interface PolicyViewService {
  readonly current: Effect.Effect<Option.Option<PolicySnapshot>>
  /** Re-reads the policy now; a failure keeps the last copy. */
  readonly refresh: Effect.Effect<void>
  /**
   * The issuers an unqualified identity member of the policy names: the control plane's first OIDC issuer, which
   * `/info` tells. Until it is known, none: such members match nobody, so a rule can only be missed, never granted
   * by mistake.
   */
  readonly issuers: Effect.Effect<Policy.Issuers>
}

export class PolicyView extends Context.Tag("mesh/PolicyView")<PolicyView, PolicyViewService>() {}

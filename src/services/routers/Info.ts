/**
 * `GET /info`: what a router or node needs before it joins: the OIDC issuer, client id and audience, the addresses
 * of routers with live leases, and every banned peer id. A database error is an error, never an empty ban list.
 */
import { Context, type Effect, type Option } from "effect"

export interface InfoService {
  /** The encoded ControlPlaneInfoResponse. */
  readonly body: Effect.Effect<Uint8Array>
  /** The encoded answer when the one in memory is still current; none when `body` would have to compute it. */
  readonly cached: Effect.Effect<Option.Option<Uint8Array>>
}

export class Info extends Context.Tag("mesh/Info")<Info, InfoService>() {}

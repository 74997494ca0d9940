/**
 * Router leases: a router announces its addresses and telemetry, and is listed on /info until its lease runs out
 * (`--lease-duration` without renewal). Leases live in the database, so any replica can serve them.
 */
import { Context, type Effect } from "effect"
import type { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"

export interface Lease {
  readonly peerId: string
  readonly addresses: ReadonlyArray<string>
  /** Peers the router reported as connected, for the mesh-connected-peers figure. */
  readonly connectedPeers: ReadonlyArray<string>
  readonly dhtSize: number
  readonly renewedAt: number
  readonly expiresAt: number
}

export interface LeaseRequest {
  /** The router's credential (bearer, or the body's `biscuit`). */
  readonly credential: Uint8Array
  readonly peerId: string
  readonly addresses: ReadonlyArray<string>
  readonly connectedPeers: ReadonlyArray<string>
  readonly dhtSize: number
  readonly challengeUnixMs: bigint
  readonly challengeSignature: Uint8Array
}

export interface LeasesService {
  readonly renew: (request: LeaseRequest) => Effect.Effect<Lease, BadRequest | Unauthorized | Forbidden>
  /** Leases not yet expired at the caller's clock. */
  readonly live: Effect.Effect<ReadonlyArray<Lease>>
}

export class Leases extends Context.Tag("mesh/Leases")<Leases, LeasesService>() {}

/**
 * OIDC enrollment (`POST /register`): a machine presents an ID token of a person or workload, and proof of its key.
 * The requested role must be bound to that identity by policy; the credential never outlives the ID token, and the
 * session (how long the machine may keep refreshing) lasts `--oidc-session-ttl`.
 */
import { Context, type Effect } from "effect"
import type { BadRequest, Conflict, Forbidden, Unauthorized, Unavailable } from "../../domain/Errors.js"
import type { Minted } from "../identity/Credentials.js"

export interface RegisterRequest {
  readonly idToken: string
  readonly peerId: string
  readonly publicKey: Uint8Array
  readonly requestedRole: string
  readonly labels: Readonly<Record<string, string>>
  readonly challengeUnixMs: bigint
  readonly challengeSignature: Uint8Array
}

export interface RegistrationService {
  readonly register: (
    request: RegisterRequest,
  ) => Effect.Effect<Minted, BadRequest | Unauthorized | Forbidden | Unavailable | Conflict>
}

export class Registration extends Context.Tag("mesh/Registration")<Registration, RegistrationService>() {}

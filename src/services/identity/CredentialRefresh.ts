/**
 * `POST /refresh`: a node trades its current credential, with a fresh proof of possession of its key, for a new
 * one. The new credential becomes the node's only current one, so the old one can never be refreshed again.
 */
import { Context, type Effect } from "effect"
import type { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"
import type { Minted } from "./Credentials.js"

export interface RefreshRequest {
  /** The credential presented as the bearer. */
  readonly presented: Uint8Array
  /** The peer id in the body; required for autonomous recovery, otherwise checked against the credential. */
  readonly peerId: string
  readonly challengeUnixMs: bigint
  readonly challengeSignature: Uint8Array
}

export interface CredentialRefreshService {
  readonly refresh: (request: RefreshRequest) => Effect.Effect<Minted, BadRequest | Unauthorized | Forbidden>
}

export class CredentialRefresh extends Context.Tag("mesh/CredentialRefresh")<
  CredentialRefresh,
  CredentialRefreshService
>() {}

export const messages = {
  notEnrolled: "node is not enrolled",
  banned: "node is banned",
  identityBanned: "identity is banned",
  sessionExpired: "session expired; enroll again interactively",
  superseded: "credential was already refreshed; enroll again",
  peerMismatch: "peer_id does not match the credential",
  notOptedIn: "credential is signed by a retired key and the node is not opted in to autonomous recovery",
} as const

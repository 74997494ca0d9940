/**
 * Bootstrap enrollment: a machine presents a bootstrap token and proof of its key. With auto-approve it is admitted
 * at once; otherwise its request waits for an operator, and the machine polls until it is approved. An approved
 * peer that enrolls again gets a new credential without approval.
 */
import { Context, type Effect } from "effect"
import type { EnrollmentRequest } from "../../domain/EnrollmentRequest.js"
import type { BadRequest, Conflict, Forbidden, Gone, NotFound, Unauthorized } from "../../domain/Errors.js"
import type { Minted } from "../identity/Credentials.js"

export interface BootstrapEnrollRequest {
  readonly bootstrapToken: string
  readonly peerId: string
  /** libp2p protobuf encoding of the peer's public key. */
  readonly publicKey: Uint8Array
  /** Empty: the token's role. */
  readonly requestedRole: string
  readonly labels: Readonly<Record<string, string>>
  readonly challengeUnixMs: bigint
  readonly challengeSignature: Uint8Array
}

export type EnrollOutcome =
  /** Without a credential when a poll finds it already collected. */
  | { readonly status: "approved"; readonly requestId: string; readonly credential: Minted | undefined }
  | { readonly status: "pending"; readonly requestId: string }
  | { readonly status: "rejected"; readonly requestId: string }

export interface StatusQuery {
  readonly peerId: string
  readonly challengeUnixMs: string | undefined
  readonly challengeSignature: string | undefined
}

export interface EnrollmentService {
  readonly enroll: (
    request: BootstrapEnrollRequest,
  ) => Effect.Effect<EnrollOutcome, BadRequest | Unauthorized | Forbidden | Gone | Conflict>
  /**
   * The state of a peer's request. The credential of an approval is released by the first poll after it, and never
   * again: later polls report the state only. Each poll's proof is single-use. Any auth failure is a 401.
   */
  readonly status: (query: StatusQuery) => Effect.Effect<EnrollOutcome, Unauthorized | Forbidden | Conflict>
  readonly pending: Effect.Effect<ReadonlyArray<EnrollmentRequest>>
  readonly approve: (id: string, by: string) => Effect.Effect<EnrollmentRequest, NotFound | Conflict | Gone | Forbidden>
  readonly reject: (id: string, by: string) => Effect.Effect<EnrollmentRequest, NotFound | Conflict>
}

export class Enrollment extends Context.Tag("mesh/Enrollment")<Enrollment, EnrollmentService>() {}

export const messages = {
  tokenInvalid: "bootstrap token is not valid",
  tokenRevoked: "bootstrap token has been revoked",
  tokenExpired: "bootstrap token has expired",
  tokenUsedUp: "bootstrap token has no usages left",
  ownerBanned: "the owner of the bootstrap token is banned",
  nodeBanned: "node is banned",
  otherRole: "node is enrolled with another role",
  oidcNode: "node is enrolled through OIDC; refresh or register again",
  alreadyEnrolled: "the peer is already enrolled; reject the request",
  collected: "the credential was already collected; enroll again with the bootstrap token",
  resolved: "enrollment request is already resolved",
  noRequest: "no such enrollment request",
} as const

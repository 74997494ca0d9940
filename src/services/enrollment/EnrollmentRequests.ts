/** The store of enrollment requests (one per peer). */
import { Context, type Effect, type Option } from "effect"
import type { EnrollmentRequest, Status } from "../../domain/EnrollmentRequest.js"

export interface EnrollmentRequestsService {
  readonly find: (id: string) => Effect.Effect<Option.Option<EnrollmentRequest>>
  readonly findByPeer: (peerId: string) => Effect.Effect<Option.Option<EnrollmentRequest>>
  readonly list: (status?: Status) => Effect.Effect<ReadonlyArray<EnrollmentRequest>>
  /** Stores the request, replacing an earlier one of the same peer. */
  readonly save: (request: EnrollmentRequest) => Effect.Effect<void>
  /** Moves a pending request to `status`; false when it was not pending any more (resolved by someone else). */
  readonly resolve: (id: string, status: "approved" | "rejected", by: string, now: number) => Effect.Effect<boolean>
  /** Marks an approved request's credential released; false when it already was (or the request is not approved). */
  readonly release: (id: string, now: number) => Effect.Effect<boolean>
}

export class EnrollmentRequests extends Context.Tag("mesh/EnrollmentRequests")<
  EnrollmentRequests,
  EnrollmentRequestsService
>() {}

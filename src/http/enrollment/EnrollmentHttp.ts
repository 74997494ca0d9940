/** Handlers of the enrollment group: protobuf in, protobuf out, credentials marked no-store. */
import { create } from "@bufbuild/protobuf"
import { timestampFromMs } from "@bufbuild/protobuf/wkt"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect } from "effect"
import { POLL_INTERVAL_SECONDS } from "../../domain/EnrollmentRequest.js"
import {
  BootstrapEnrollRequestSchema,
  BootstrapEnrollResponseSchema,
  EnrollmentStatus,
  EnrollRequestSchema,
  EnrollResponseSchema,
} from "../../gen/mesh_pb.js"
import { Enrollment, type EnrollOutcome, messages } from "../../services/enrollment/Enrollment.js"
import { Registration } from "../../services/enrollment/Registration.js"
import { KeyRing } from "../../services/identity/KeyRing.js"
import { Leases } from "../../services/routers/Leases.js"
import { ControlPlaneApi } from "../Api.js"
import * as Protobuf from "../Protobuf.js"

const statusOf = {
  approved: EnrollmentStatus.APPROVED,
  pending: EnrollmentStatus.PENDING,
  rejected: EnrollmentStatus.REJECTED,
}

export const EnrollmentHttpLive = HttpApiBuilder.group(ControlPlaneApi, "enrollment", (handlers) =>
  Effect.gen(function* () {
    const enrollment = yield* Enrollment
    const registration = yield* Registration
    const keyRing = yield* KeyRing
    const leases = yield* Leases

    /** What an enrolled machine needs to join: the key that signs credentials, and the routers with live leases. */
    const meshContext = Effect.zipWith(keyRing.snapshot, leases.live, (snapshot, live) => ({
      controlPlanePublicKey: snapshot.current.publicKey,
      routerAddresses: live.flatMap((lease) => lease.addresses),
    }))

    const bootstrapResponse = (outcome: EnrollOutcome) =>
      Effect.map(meshContext, (context) =>
        Protobuf.respond(
          BootstrapEnrollResponseSchema,
          create(BootstrapEnrollResponseSchema, {
            status: statusOf[outcome.status],
            requestId: outcome.requestId,
            ...(outcome.status === "approved"
              ? outcome.credential === undefined
                ? { errorMessage: messages.collected }
                : {
                    biscuitToken: outcome.credential.bytes,
                    expireTime: timestampFromMs(outcome.credential.expiresAtMs),
                    ...context,
                  }
              : outcome.status === "pending"
                ? { pollIntervalSeconds: POLL_INTERVAL_SECONDS }
                : {}),
          }),
          { noStore: true },
        ),
      )

    return handlers
      .handle("register", ({ payload }) =>
        Effect.gen(function* () {
          const body = yield* Protobuf.decode(EnrollRequestSchema, payload)
          const minted = yield* registration.register({
            idToken: body.jwt,
            peerId: body.peerId,
            publicKey: body.publicKey,
            requestedRole: body.requestedRole,
            labels: body.labels,
            challengeUnixMs: body.challengeUnixMs,
            challengeSignature: body.challengeSignature,
          })
          const context = yield* meshContext
          return Protobuf.respond(
            EnrollResponseSchema,
            create(EnrollResponseSchema, {
              biscuitToken: minted.bytes,
              expireTime: timestampFromMs(minted.expiresAtMs),
              ...context,
            }),
            { noStore: true },
          )
        }),
      )
      .handle("enroll", ({ payload }) =>
        Effect.gen(function* () {
          const body = yield* Protobuf.decode(BootstrapEnrollRequestSchema, payload)
          const outcome = yield* enrollment.enroll({
            bootstrapToken: body.bootstrapToken,
            peerId: body.peerId,
            publicKey: body.publicKey,
            requestedRole: body.requestedRole,
            labels: body.labels,
            challengeUnixMs: body.challengeUnixMs,
            challengeSignature: body.challengeSignature,
          })
          return yield* bootstrapResponse(outcome)
        }),
      )
      .handle("status", ({ urlParams }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const outcome = yield* enrollment.status({
            peerId: urlParams.peer_id ?? "",
            challengeUnixMs: request.headers["x-mesh-challenge-ts"],
            challengeSignature: request.headers["x-mesh-challenge-sig"],
          })
          return yield* bootstrapResponse(outcome)
        }),
      )
  }),
)

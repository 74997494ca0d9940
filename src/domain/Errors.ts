/**
 * The domain errors that may reach an HTTP client. Each carries its status as an HttpApi annotation; the renderer in
 * src/http/ErrorResponse.ts turns any of them into the one error body of the API:
 *
 *   { "error": "<code>", "message": "<text>" }
 *
 * `code` is stable and machine-readable (snake_case of the tag); `message` is for humans and never holds a secret.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"

export class BadRequest extends Schema.TaggedError<BadRequest>()(
  "BadRequest",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 400 }),
) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 }),
) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403 }),
) {}

export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404 }),
) {}

/** A node route that answers only over the Unix socket or a verified mTLS connection was called over plain TCP. */
export class StrongTransportRequired extends Schema.TaggedError<StrongTransportRequired>()(
  "StrongTransportRequired",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403 }),
) {}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()(
  "MethodNotAllowed",
  { message: Schema.String, allow: Schema.Array(Schema.String) },
  HttpApiSchema.annotations({ status: 405 }),
) {}

export class Conflict extends Schema.TaggedError<Conflict>()(
  "Conflict",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 409 }),
) {}

/** A resource that existed is no longer usable (a revoked, expired or used-up bootstrap token). */
export class Gone extends Schema.TaggedError<Gone>()(
  "Gone",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 410 }),
) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 413 }),
) {}

export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()(
  "UnsupportedMediaType",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 415 }),
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  { message: Schema.String, retryAfterSeconds: Schema.Number },
  HttpApiSchema.annotations({ status: 429 }),
) {}

/** The request is valid but this release cannot serve it. */
export class NotImplemented extends Schema.TaggedError<NotImplemented>()(
  "NotImplemented",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 501 }),
) {}

/**
 * The peer or backend a node forwards to could not be reached or did not answer properly. `delivered`: the request
 * had gone out when it failed, so it may have run (a caller must not repeat what is not idempotent); not on the wire.
 */
export class BadGateway extends Schema.TaggedError<BadGateway>()(
  "BadGateway",
  { message: Schema.String, delivered: Schema.optional(Schema.Boolean) },
  HttpApiSchema.annotations({ status: 502 }),
) {}

/**
 * The service behind a node refused the connection or could not be found: the request never reached it, so a caller
 * may send it again (unlike a BadGateway, after which it may have run).
 */
export class BackendUnreachable extends Schema.TaggedError<BackendUnreachable>()(
  "BackendUnreachable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 502 }),
) {}

/** A dependency the route needs (the database) cannot be reached right now; the client may retry. */
export class Unavailable extends Schema.TaggedError<Unavailable>()(
  "Unavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503 }),
) {}

/** A completion named a model that no reachable provider lists (`/v1/*`). */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()(
  "ModelNotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404 }),
) {}

/** Providers of the model exist, but none attests the labels the caller or the operator requires (`/v1/*`). */
export class NoEligibleProvider extends Schema.TaggedError<NoEligibleProvider>()(
  "NoEligibleProvider",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403 }),
) {}

/** Every eligible provider of the model failed or is cooling down after a failure; retry after the delay. */
export class NoAvailableProvider extends Schema.TaggedError<NoAvailableProvider>()(
  "NoAvailableProvider",
  { message: Schema.String, retryAfterSeconds: Schema.Number },
  HttpApiSchema.annotations({ status: 503 }),
) {}

/** Every error the API renders; handlers fail only with these. */
export const ApiErrors = [
  BadRequest,
  Unauthorized,
  Forbidden,
  NotFound,
  StrongTransportRequired,
  MethodNotAllowed,
  Conflict,
  Gone,
  PayloadTooLarge,
  UnsupportedMediaType,
  RateLimited,
  NotImplemented,
  BadGateway,
  BackendUnreachable,
  Unavailable,
  ModelNotFound,
  NoEligibleProvider,
  NoAvailableProvider,
] as const

export type ApiError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | StrongTransportRequired
  | MethodNotAllowed
  | Conflict
  | Gone
  | PayloadTooLarge
  | UnsupportedMediaType
  | RateLimited
  | NotImplemented
  | BadGateway
  | BackendUnreachable
  | Unavailable
  | ModelNotFound
  | NoEligibleProvider
  | NoAvailableProvider

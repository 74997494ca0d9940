/**
 * The operator's bearer token (`--admin-token-path` / MESH_ADMIN_TOKEN) on /admin/* and on policy writes. Compared
 * as SHA-256 digests in constant time; without a configured token every request is refused.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import { Effect, Layer, Option, Redacted } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { Unauthorized } from "../../domain/Errors.js"

export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("mesh/AdminAuth", {
  failure: Unauthorized,
  security: { bearer: HttpApiSecurity.bearer },
}) {}

const digest = (value: string) => createHash("sha256").update(value).digest()

/** A checker of presented tokens against the configured one. */
export const makeCheck = (configured: Option.Option<Redacted.Redacted<string>>) => {
  const expected = Option.map(configured, (token) => digest(Redacted.value(token)))
  return (presented: string): boolean =>
    Option.match(expected, {
      onNone: () => false,
      onSome: (hash) => presented.length > 0 && timingSafeEqual(hash, digest(presented)),
    })
}

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.map(ControlPlaneConfig, (config) => {
    const check = makeCheck(config.adminToken)
    const refusal = new Unauthorized({
      message: Option.isNone(config.adminToken)
        ? "the admin API is disabled: no admin token is configured"
        : "an admin token is required as Authorization: Bearer",
    })
    return { bearer: (token) => (check(Redacted.value(token)) ? Effect.void : Effect.fail(refusal)) }
  }),
)
